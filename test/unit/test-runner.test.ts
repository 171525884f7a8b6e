import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * `npm test` (test/run.mjs) with stand-in `npm` and `npx` commands on the PATH: both runners run whatever
 * the other's outcome, each gets its summary line, and the exit code fails when any of them failed.
 */
const runner = join(import.meta.dirname, '..', 'run.mjs');
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function fakes(opts: {
  check: number;
  vitestFailed: number;
  playwrightFailed: number;
  hookFailed?: boolean;
}) {
  const dir = mkdtempSync(join(tmpdir(), 'loupe-run-'));
  dirs.push(dir);
  const reports = join(dir, 'reports');
  const log = join(dir, 'calls.log');
  // `npm run -s check|build:console`: exit with the check's status.
  writeFileSync(join(dir, 'npm'), `#!/bin/sh\necho "npm $*" >> ${log}\nexit ${opts.check}\n`);
  const vitest = JSON.stringify({
    numPassedTests: 10,
    numFailedTests: opts.vitestFailed,
    numPendingTests: 2,
    numTodoTests: 0,
    success: !opts.vitestFailed && !opts.hookFailed,
    testResults: [
      { status: opts.vitestFailed || opts.hookFailed ? 'failed' : 'passed' },
      { status: 'passed' },
    ],
  });
  const playwright = JSON.stringify({
    stats: { expected: 5, unexpected: opts.playwrightFailed, skipped: 1, flaky: 0 },
    errors: [],
  });
  writeFileSync(
    join(dir, 'npx'),
    `#!/bin/sh
echo "npx $1" >> ${log}
if [ "$1" = vitest ]; then
  for a in "$@"; do case "$a" in --outputFile.json=*) printf '%s' '${vitest}' > "\${a#--outputFile.json=}";; esac; done
  exit ${opts.vitestFailed || opts.hookFailed ? 1 : 0}
fi
printf '%s' '${playwright}' > "$PLAYWRIGHT_JSON_OUTPUT_NAME"
exit ${opts.playwrightFailed ? 1 : 0}
`,
  );
  chmodSync(join(dir, 'npm'), 0o755);
  chmodSync(join(dir, 'npx'), 0o755);
  return { dir, reports, log };
}

function runWith(f: ReturnType<typeof fakes>) {
  return new Promise<{ code: number; out: string; calls: string }>((resolve) =>
    execFile(
      process.execPath,
      [runner],
      {
        env: {
          ...process.env,
          PATH: `${f.dir}${delimiter}${process.env.PATH}`,
          LOUPE_TEST_REPORT_DIR: f.reports,
        },
      },
      (err, stdout) =>
        resolve({
          code: err ? Number(err.code) : 0,
          out: stdout,
          calls: readFileSync(f.log, 'utf8'),
        }),
    ),
  );
}

describe('npm test (test/run.mjs)', () => {
  it('a failing vitest still lets Playwright run; both lines are printed; the exit code fails', async () => {
    const r = await runWith(fakes({ check: 0, vitestFailed: 3, playwrightFailed: 0 }));
    expect(r.calls.split('\n').filter(Boolean)).toEqual([
      'npm run -s check',
      'npm run -s build:console',
      'npx vitest',
      'npx playwright',
    ]);
    expect(r.out).toMatch(/^vitest: 10 passed, 3 failed, 2 skipped, 1 of 2 files failed \(\d+ s\)$/m);
    expect(r.out).toMatch(/^playwright: 5 passed, 0 failed, 1 skipped \(\d+ s\)$/m);
    expect(r.out).toMatch(/^npm test: FAILED in /m);
    expect(r.code).toBe(1);
  });

  it('a failing Playwright fails the run after a green vitest', async () => {
    const r = await runWith(fakes({ check: 0, vitestFailed: 0, playwrightFailed: 2 }));
    expect(r.out).toMatch(/^vitest: 10 passed, 0 failed/m);
    expect(r.out).toMatch(/^playwright: 5 passed, 2 failed/m);
    expect(r.code).toBe(1);
  });

  it('a file whose setup hook failed (its tests skipped, none failed) fails the run and is counted', async () => {
    const r = await runWith(fakes({ check: 0, vitestFailed: 0, playwrightFailed: 0, hookFailed: true }));
    expect(r.out).toMatch(/^vitest: 10 passed, 0 failed, 2 skipped, 1 of 2 files failed/m);
    expect(r.out).toMatch(/^playwright: 5 passed/m);
    expect(r.code).toBe(1);
  });

  it('both green: exit 0', async () => {
    const r = await runWith(fakes({ check: 0, vitestFailed: 0, playwrightFailed: 0 }));
    expect(r.out).toMatch(/^npm test: passed in /m);
    expect(r.code).toBe(0);
  });

  it('a failed type check or lint runs neither runner and says so', async () => {
    const r = await runWith(fakes({ check: 1, vitestFailed: 0, playwrightFailed: 0 }));
    expect(r.calls).not.toContain('npx');
    expect(r.out).toContain('vitest: not run (the type checks or Biome failed)');
    expect(r.out).toContain('playwright: not run (the type checks or Biome failed)');
    expect(r.code).toBe(1);
  });
});

describe('summary lines', () => {
  it('round wall time to whole seconds before splitting minutes (599.6 s is 10 min 0 s)', async () => {
    const { vitestLine, playwrightLine } = await import('../run.mjs');
    const report = {
      numPassedTests: 1,
      numFailedTests: 0,
      numPendingTests: 0,
      numTodoTests: 0,
      testResults: [],
    };
    expect(vitestLine(report, 599.6)).toBe('vitest: 1 passed, 0 failed, 0 skipped (10 min 0 s)');
    expect(vitestLine(report, 59.7)).toBe('vitest: 1 passed, 0 failed, 0 skipped (1 min 0 s)');
    const pw = { stats: { expected: 2, unexpected: 0, skipped: 0, flaky: 0 } };
    expect(playwrightLine(pw, 125.2)).toBe('playwright: 2 passed, 0 failed, 0 skipped (2 min 5 s)');
  });
});
