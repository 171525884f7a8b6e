import { setFlagsFromString } from 'node:v8';

let applied = false;

/**
 * Keeps the SQL parsers' WebAssembly on V8's baseline compiler (Liftoff), before either is compiled.
 *
 * With V8's default dynamic tiering, a hot function is recompiled by the optimizing compiler (TurboFan).
 * libpg-query's grammar function (about 100 KB of wasm) then takes seconds and about 600 MB of compiler
 * memory to optimize, on a background thread, a few thousand statements after start; the process's
 * resident memory jumps by hundreds of MB and glibc does not give the freed fragments back (issue 22:
 * 1 GB of anonymous memory outside the JavaScript heap). Baseline code parses a statement about 0.06 ms
 * (PostgreSQL) and 0.2 ms (sqlparser-rs) slower and never costs that memory. The flags are process-wide
 * and apply to modules compiled after this call (both parsers load lazily, after it).
 */
export function baselineWasmOnly(): void {
  if (applied) return;
  applied = true;
  setFlagsFromString('--no-wasm-tier-up');
  setFlagsFromString('--no-wasm-dynamic-tiering');
}
