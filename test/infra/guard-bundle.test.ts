import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { bundleFunction } from '../../infra/bundling';
import { ROOT } from '../../infra/functions';

mkdirSync(join(ROOT, '.tmp'), { recursive: true });
const out = mkdtempSync(join(ROOT, '.tmp', 'guard-bundle-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

describe('the guard in a function bundle', () => {
  it('loads libpg-query and sqlparser-rs (WebAssembly) from the bundle in a fresh Node process', async () => {
    const r = await bundleFunction(
      { kind: 'http', name: 'guard-parsers', entry: 'test/infra/fixtures/guard-parsers.ts' } as never,
      out,
    );
    expect(existsSync(join(r.dir, 'chunks', 'libpg-query.wasm'))).toBe(true);
    expect(existsSync(join(r.dir, 'wasm', 'sqlparser_rs_wasm_bg.wasm'))).toBe(true);
    // Nothing of the parsers is loaded at start: they are lazy chunks.
    expect(r.initialBytes).toBeLessThan(400 * 1024);
    const answer = execFileSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `const m = await import(${JSON.stringify(join(r.dir, 'index.mjs'))}); console.log(JSON.stringify(await m.handler()));`,
      ],
      { cwd: out, encoding: 'utf8', timeout: 60_000 },
    );
    expect(JSON.parse(answer.trim())).toEqual(['select', 'select', 'FUNCTION']);
  }, 120_000);
});
