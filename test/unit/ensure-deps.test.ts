import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { EngineWarnings, introLines, packagesOf, progressLine } from '../../infra/ensure-deps.mjs';

/**
 * The first start (infra/ensure-deps.mjs, run before `npm start` and `npm test`): what it says while the
 * dependencies and Node 24 install, with npm's EBADENGINE warnings explained instead of shown, then
 * nothing at all on the next start. The end-to-end case runs the script for real in a scratch folder with
 * a stand-in `npm` on the PATH that prints what npm 10 prints and unpacks packages (a real `npm ci` takes
 * a minute or more; its output is shown in docs/internals/testing.md, "The first start").
 */
const script = join(import.meta.dirname, '..', '..', 'infra', 'ensure-deps.mjs');
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** What npm 10 on Node 20 prints for the project's own `engines` and one dependency's. */
const ENGINE_WARNINGS = [
  'npm warn EBADENGINE Unsupported engine {',
  "npm warn EBADENGINE   package: 'loupe@1.0.0',",
  "npm warn EBADENGINE   required: { node: '>=24' },",
  "npm warn EBADENGINE   current: { node: 'v20.20.2', npm: '10.8.2' }",
  'npm warn EBADENGINE }',
  'npm warn EBADENGINE Unsupported engine {',
  "npm warn EBADENGINE   package: 'some-dep@2.0.0',",
  "npm warn EBADENGINE   required: { node: '>=24' },",
  "npm warn EBADENGINE   current: { node: 'v20.20.2', npm: '10.8.2' }",
  'npm warn EBADENGINE }',
];

describe('the messages', () => {
  it('say what is installed, why (the machine node is older), and roughly how long', () => {
    const text = introLines('v20.20.2', 749).join('\n');
    expect(text).toContain('npm ci, about 749 packages');
    expect(text).toContain("this machine's node is v20.20.2, so the install brings Node 24");
    expect(text).toMatch(/about 1 to 5 minutes/);
    expect(text).toMatch(/later starts skip this step/);
    expect(introLines('v24.21.0').join('\n')).not.toContain("this machine's node");
  });

  it('progress: packages unpacked, then the install scripts with Node 24', () => {
    expect(progressLine({ ms: 12_000, unpacked: 300, total: 749, nodeReady: false })).toBe(
      '  … 12 s: 300 of about 749 packages unpacked',
    );
    expect(progressLine({ ms: 65_000, unpacked: 749, total: 749, nodeReady: false })).toMatch(
      /^ {2}… 1 min 5 s: all packages unpacked; install scripts running \(downloading Node 24/,
    );
    expect(progressLine({ ms: 70_000, unpacked: 749, total: 749, nodeReady: true })).toContain(
      'Node 24 ready',
    );
  });

  it('EBADENGINE warnings are taken out and summed up in one explaining line', () => {
    const w = new EngineWarnings();
    const kept = [...ENGINE_WARNINGS, 'npm warn deprecated x@1: use y', 'added 2 packages in 1s'].filter(
      (l) => !w.take(l),
    );
    expect(kept).toEqual(['npm warn deprecated x@1: use y', 'added 2 packages in 1s']);
    expect(w.summary('v20.20.2')).toBe(
      "  (npm's EBADENGINE warnings left out: 2 packages (loupe@1.0.0, some-dep@2.0.0) require node >=24 and npm ran on v20.20.2. Expected on a first install: from now on npm scripts run on the Node 24 just installed.)",
    );
    expect(new EngineWarnings().summary()).toBeUndefined();
  });

  it('counts the packages npm installs here: required ones and this platform’s optional binaries', () => {
    const lock = {
      packages: {
        '': { name: 'loupe' },
        'node_modules/a': {},
        'node_modules/@esbuild/linux-x64': { optional: true, os: ['linux'], cpu: ['x64'] },
        'node_modules/@esbuild/darwin-arm64': { optional: true, os: ['darwin'], cpu: ['arm64'] },
        'node_modules/@biomejs/cli-linux-x64-musl': {
          optional: true,
          os: ['linux'],
          cpu: ['x64'],
          libc: ['musl'],
        },
        'node_modules/wasm-fallback': { optional: true },
        'node_modules/linked': { link: true },
      },
    };
    expect(packagesOf(lock, 'linux', 'x64')).toEqual(['node_modules/a', 'node_modules/@esbuild/linux-x64']);
  });
});

/** A scratch project folder with a stand-in npm: `npm ci` unpacks two packages and Node, `npm run` builds the console. */
function scratch() {
  const dir = mkdtempSync(join(tmpdir(), 'loupe-first-start-'));
  dirs.push(dir);
  const bin = join(dir, '.fake-bin');
  mkdirSync(bin);
  writeFileSync(
    join(dir, 'package-lock.json'),
    JSON.stringify({ packages: { '': {}, 'node_modules/a': {}, 'node_modules/b': {} } }),
  );
  writeFileSync(
    join(bin, 'npm'),
    `#!/bin/sh
echo "$*" >> npm-calls.log
if [ "$1" = ci ]; then
${ENGINE_WARNINGS.map((l) => `  echo "${l.replaceAll('"', '\\"')}" >&2`).join('\n')}
  mkdir -p node_modules/a node_modules/.bin && echo '{}' > node_modules/a/package.json
  # Finishes only once the test has seen a progress line (no race with the progress timer).
  while [ ! -e progress-seen ]; do sleep 0.05; done
  mkdir -p node_modules/b && echo '{}' > node_modules/b/package.json
  ln -s "$(command -v sh)" node_modules/.bin/node && echo '{}' > node_modules/.package-lock.json
  echo ""
  echo "added 3 packages in 2s"
  exit 0
fi
mkdir -p console/dist && echo '<!doctype html>' > console/dist/index.html
`,
  );
  chmodSync(join(bin, 'npm'), 0o755);
  return { dir, bin };
}

/** Runs the script in the scratch folder; a first progress line lets the stand-in npm finish. */
function start(s: ReturnType<typeof scratch>) {
  return new Promise<{ code: number; out: string }>((resolve) => {
    const child = spawn(process.execPath, [script], {
      cwd: s.dir,
      env: { ...process.env, PATH: `${s.bin}${delimiter}${process.env.PATH}`, LOUPE_DEPS_PROGRESS_MS: '100' },
    });
    let out = '';
    const take = (d: Buffer) => {
      out += d.toString();
      if (/packages unpacked/.test(out)) writeFileSync(join(s.dir, 'progress-seen'), '');
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    child.on('close', (code) => resolve({ code: code ?? 1, out }));
  });
}

describe('infra/ensure-deps.mjs in a fresh folder', () => {
  it('first start: says why and how long, shows progress, explains the engine warnings, builds the console; second start: silent', async () => {
    const s = scratch();
    const first = await start(s);
    expect(first.code, first.out).toBe(0);
    const lines = first.out.split('\n');
    const at = (re: RegExp) => lines.findIndex((l) => re.test(l));
    // In this order: the announcement, progress while npm works, npm's own summary, the explanation,
    // the result, then the console build.
    const order = [
      at(/^Loupe: installing the locked dependencies \(npm ci, about 2 packages\)/),
      at(/^ {2}… \d+ s: \d of about 2 packages unpacked$/),
      at(/^added 3 packages in 2s$/),
      at(/EBADENGINE warnings left out: 2 packages \(loupe@1\.0\.0, some-dep@2\.0\.0\) require node >=24/),
      at(/^Dependencies and Node 24 installed in \d+ s\.$/),
      at(/^Building the web console/),
      at(/^Web console built in \d+ s\.$/),
    ];
    expect(
      order.every((i) => i >= 0),
      first.out,
    ).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    expect(first.out).not.toMatch(/Unsupported engine|required: \{ node/);

    const second = await start(s);
    expect(second).toEqual({ code: 0, out: '' });
  });

  it('a failed npm ci stops the start with its exit code and says so', async () => {
    const s = scratch();
    writeFileSync(join(s.bin, 'npm'), '#!/bin/sh\necho "npm error network ETIMEDOUT" >&2\nexit 7\n');
    const r = await start(s);
    expect(r.code).toBe(7);
    expect(r.out).toContain('npm error network ETIMEDOUT');
    expect(r.out).toMatch(/npm ci failed \(exit 7\) after \d+ s; its messages are above\./);
    expect(r.out).not.toContain('Building the web console');
  });
});
