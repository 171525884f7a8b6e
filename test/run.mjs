// `npm test`: the type checks and Biome (`npm run check`), the console build, then BOTH test runners,
// vitest and Playwright, each run whatever the other's outcome. Each runner writes a JSON report under
// .tmp/, from which one summary line per runner is printed at the end (with its wall time); the exit code
// fails when any step failed. Plain JavaScript: npm runs it on the pinned Node 24 (node_modules/.bin).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..');
// LOUPE_TEST_REPORT_DIR: where the JSON reports go (default .tmp; test/unit/test-runner.test.ts sets it).
const tmp = process.env.LOUPE_TEST_REPORT_DIR ?? join(root, '.tmp');
const VITEST_REPORT = join(tmp, 'vitest-report.json');
const PLAYWRIGHT_REPORT = join(tmp, 'playwright-report.json');

/** Runs a command inheriting the terminal; answers its exit status and wall time. */
function run(cmd, args, env = {}) {
  const t0 = Date.now();
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit', env: { ...process.env, ...env } });
  return { ok: r.status === 0, seconds: (Date.now() - t0) / 1000 };
}

const read = (file) => (existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : undefined);
const took = (seconds) => {
  const s = Math.round(seconds); // whole seconds first: 599.6 s is "10 min 0 s", never "9 min 60 s"
  return s >= 60 ? `${Math.floor(s / 60)} min ${s % 60} s` : `${s} s`;
};

/** The summary line of a vitest JSON report (a file whose hook failed counts, though its tests are skipped). */
export function vitestLine(report, seconds) {
  if (!report) return 'vitest: no report (it did not start, or it crashed)';
  const skipped = report.numPendingTests + report.numTodoTests;
  const files = report.testResults ?? [];
  const failedFiles = files.filter((f) => f.status === 'failed').length;
  const broken = failedFiles ? `, ${failedFiles} of ${files.length} files failed` : '';
  return `vitest: ${report.numPassedTests} passed, ${report.numFailedTests} failed, ${skipped} skipped${broken} (${took(seconds)})`;
}

/** The summary line of a Playwright JSON report (expected = passed, unexpected = failed, flaky = passed on retry). */
export function playwrightLine(report, seconds) {
  if (!report) return 'playwright: no report (it did not start, or it crashed)';
  const s = report.stats;
  const errors = report.errors?.length ? `, ${report.errors.length} errors outside tests` : '';
  const flaky = s.flaky ? `, ${s.flaky} flaky` : '';
  return `playwright: ${s.expected} passed, ${s.unexpected} failed, ${s.skipped} skipped${flaky}${errors} (${took(seconds)})`;
}

function main() {
  const t0 = Date.now();
  mkdirSync(tmp, { recursive: true });
  rmSync(VITEST_REPORT, { force: true });
  rmSync(PLAYWRIGHT_REPORT, { force: true });
  const lines = [];
  let ok = true;
  const section = (title) => process.stdout.write(`\n==> ${title}\n`);

  section('npm run check (type checks, Biome)');
  const check = run('npm', ['run', '-s', 'check']);
  section('npm run build:console');
  const build = check.ok ? run('npm', ['run', '-s', 'build:console']) : { ok: false };
  if (!check.ok || !build.ok) {
    ok = false;
    const what = !check.ok ? 'the type checks or Biome failed' : 'the console build failed';
    lines.push(`vitest: not run (${what})`, `playwright: not run (${what})`);
  } else {
    section('vitest run (unit, integration, infra)');
    const v = run('npx', [
      'vitest',
      'run',
      '--reporter=default',
      '--reporter=json',
      `--outputFile.json=${VITEST_REPORT}`,
    ]);
    const vr = read(VITEST_REPORT);
    lines.push(vitestLine(vr, v.seconds));
    ok &&= v.ok && !!vr && vr.success !== false && vr.numFailedTests === 0;

    section('playwright test (the web console in chromium)');
    const p = run('npx', ['playwright', 'test', '--reporter=list,json'], {
      PLAYWRIGHT_JSON_OUTPUT_NAME: PLAYWRIGHT_REPORT,
    });
    const pr = read(PLAYWRIGHT_REPORT);
    lines.push(playwrightLine(pr, p.seconds));
    ok &&= p.ok && !!pr && pr.stats.unexpected === 0 && !pr.errors?.length;
  }
  process.stdout.write(
    `\n${lines.join('\n')}\nnpm test: ${ok ? 'passed' : 'FAILED'} in ${took((Date.now() - t0) / 1000)}\n`,
  );
  process.exitCode = ok ? 0 : 1;
}

if (process.argv[1] && import.meta.filename === process.argv[1]) main();
