import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { beforeEach, expect } from 'vitest';

/**
 * Quiet tests (vitest setupFiles): what a test file's process writes (the local runtime's JSON logs,
 * its start announcements, console output of the code under test) goes to a log file per test file,
 * `.tmp/test-logs/<test file>.log`, instead of the console, so `npm test` prints only the results. When
 * a test fails, the lines written while it ran are printed after it, with the path of the whole file.
 * Tests that read the output back (test/support/output.ts) still see every line.
 */
const root = join(import.meta.dirname, '..', '..');
const testFile = expect.getState().testPath ?? 'unknown';
const logFile = join(root, '.tmp', 'test-logs', `${relative(root, testFile).replace(/[\\/]/g, '__')}.log`);
mkdirSync(dirname(logFile), { recursive: true });
writeFileSync(logFile, '');

const original = {
  out: process.stdout.write.bind(process.stdout),
  err: process.stderr.write.bind(process.stderr),
};
let current: string[] = [];
const divert = (chunk: unknown, ...rest: unknown[]) => {
  const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk as Uint8Array).toString('utf8');
  current.push(text);
  appendFileSync(logFile, text);
  const done = rest.find((r) => typeof r === 'function') as (() => void) | undefined;
  done?.();
  return true;
};
process.stdout.write = divert as typeof process.stdout.write;
process.stderr.write = divert as typeof process.stderr.write;
for (const level of ['log', 'info', 'warn', 'error', 'debug'] as const)
  console[level] = (...args: unknown[]) =>
    divert(`${args.map((a) => (typeof a === 'string' ? a : (JSON.stringify(a) ?? String(a)))).join(' ')}\n`);

beforeEach(({ task, onTestFailed }) => {
  current = [];
  appendFileSync(logFile, `\n--- ${task.name}\n`);
  onTestFailed(() => {
    const lines = current.join('');
    original.err(
      `\n--- What the process wrote during "${task.name}" (whole file: ${relative(root, logFile)}):\n${
        lines.length > 20_000 ? `…${lines.slice(-20_000)}` : lines || '(nothing)\n'
      }`,
    );
  });
});
