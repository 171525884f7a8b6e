// Runs before `npm start` and `npm test` (plain JavaScript, so any installed node can run it). On a fresh
// clone it installs the locked dependencies (`npm ci`), which also brings the pinned Node 24, saying why,
// roughly how long, and how far it got every few seconds; npm's EBADENGINE warnings (packages that require
// Node >= 24 while npm itself runs on an older machine node) are left out and explained in one line. Then
// it builds the web console (console/dist, not committed) when it is missing. When nothing is missing it
// prints nothing: a second start looks exactly like before.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const NODE_MAJOR = 24;
/** How often a progress line is printed while npm works (LOUPE_DEPS_PROGRESS_MS: tests make it short). */
const PROGRESS_MS = Number(process.env.LOUPE_DEPS_PROGRESS_MS) || 10_000;

/** What the folder lacks: the dependencies (with Node 24) and the built console. */
export function missing(exists = existsSync) {
  return {
    deps: !exists('node_modules/.package-lock.json') || !exists('node_modules/.bin/node'),
    console: !exists('console/dist/index.html'),
  };
}

/** The lines printed before `npm ci`: what happens, why, and roughly how long. */
export function introLines(machineNode = process.version, packages = 0) {
  const major = Number(/^v?(\d+)/.exec(machineNode)?.[1]);
  const why =
    major >= NODE_MAJOR
      ? `Loupe runs on Node ${NODE_MAJOR}, pinned by the \`node\` package that this installs too.`
      : `Loupe runs on Node ${NODE_MAJOR}; this machine's node is ${machineNode}, so the install brings Node ${NODE_MAJOR}\n` +
        '  into node_modules (the `node` package) and npm scripts run on it. Nothing outside this folder changes.';
  return [
    `Loupe: installing the locked dependencies (npm ci${packages ? `, about ${packages} packages` : ''}), once for this folder.`,
    `  ${why}`,
    '  It takes about 1 to 5 minutes (several hundred MB to download and unpack; a loaded machine or a slow',
    '  network takes longer). Progress follows every few seconds; later starts skip this step.',
  ];
}

/**
 * Lockfile entries npm surely installs here: the required ones, and the optional ones made for this
 * platform (others are binaries of other systems, or fallbacks npm leaves out).
 */
export function packagesOf(lock, platform = process.platform, arch = process.arch) {
  const fits = (list, value) =>
    list.includes(value) || (list.every((x) => x.startsWith('!')) && !list.includes(`!${value}`));
  const here = (p) =>
    p.os || p.cpu
      ? fits(p.os ?? [platform], platform) && fits(p.cpu ?? [arch], arch) && !p.libc?.includes('musl')
      : !p.optional;
  return Object.entries(lock?.packages ?? {})
    .filter(([path, p]) => path && !p.link && here(p))
    .map(([path]) => path);
}

const took = (ms) => {
  const s = Math.round(ms / 1000);
  return s >= 60 ? `${Math.floor(s / 60)} min ${s % 60} s` : `${s} s`;
};

/** One progress line: packages unpacked so far, then the install scripts (Node 24's download among them). */
export function progressLine({ ms, unpacked, total, nodeReady }) {
  const at = `  … ${took(ms)}:`;
  if (!total || unpacked < total)
    return `${at} ${unpacked}${total ? ` of about ${total}` : ''} packages unpacked`;
  return nodeReady
    ? `${at} all packages unpacked, Node ${NODE_MAJOR} ready; install scripts finishing (embedded PostgreSQL, esbuild)`
    : `${at} all packages unpacked; install scripts running (downloading Node ${NODE_MAJOR}, embedded PostgreSQL, esbuild)`;
}

/**
 * npm's EBADENGINE warnings are several lines each (`npm warn EBADENGINE Unsupported engine {` … `}`): they
 * are left out, and the packages they name are summed up in one explaining line.
 */
export class EngineWarnings {
  packages = [];
  required = new Set();
  /** Whether the line is part of an EBADENGINE warning (and so left out). */
  take(line) {
    if (!/^npm (warn|WARN) EBADENGINE/.test(line)) return false;
    const pkg = /package: '([^']+)'/.exec(line)?.[1];
    if (pkg) this.packages.push(pkg);
    const req = /required: \{ node: '([^']+)'/.exec(line)?.[1];
    if (req) this.required.add(req);
    return true;
  }
  summary(machineNode = process.version) {
    if (!this.packages.length) return undefined;
    const n = this.packages.length;
    const shown = this.packages.slice(0, 4).join(', ') + (n > 4 ? ', …' : '');
    const needs = [...this.required].join(' or ') || `>=${NODE_MAJOR}`;
    return (
      `  (npm's EBADENGINE warnings left out: ${n === 1 ? `${shown} requires` : `${n} packages (${shown}) require`} ` +
      `node ${needs} and npm ran on ${machineNode}. Expected on a first install: from now on npm scripts run on the ` +
      `Node ${NODE_MAJOR} just installed.)`
    );
  }
}

/** Calls `onLine` for each complete line of a stream (and the rest at its end). */
function lines(stream, onLine) {
  let rest = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk) => {
    const parts = (rest + chunk).split('\n');
    rest = parts.pop() ?? '';
    for (const l of parts) onLine(l);
  });
  stream.on('end', () => {
    if (rest) onLine(rest);
  });
}

function run(cmd, args, { filter } = {}) {
  return new Promise((done) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const out = (to) => (l) => {
      if (!filter?.(l)) to.write(`${l}\n`);
    };
    lines(child.stdout, out(process.stdout));
    lines(child.stderr, out(process.stderr));
    child.on('error', (e) => {
      process.stderr.write(`Could not run ${cmd}: ${e.message}\n`);
      done(1);
    });
    child.on('close', (code) => done(code ?? 1));
  });
}

async function installDeps() {
  let expected = [];
  try {
    expected = packagesOf(JSON.parse(readFileSync('package-lock.json', 'utf8')));
  } catch {
    // no readable lockfile: npm ci says so itself
  }
  for (const l of introLines(process.version, expected.length)) console.log(l);
  const t0 = Date.now();
  const engines = new EngineWarnings();
  const timer = setInterval(() => {
    const unpacked = expected.filter((p) => existsSync(`${p}/package.json`)).length;
    console.log(
      progressLine({
        ms: Date.now() - t0,
        unpacked,
        total: expected.length,
        nodeReady: existsSync('node_modules/.bin/node'),
      }),
    );
  }, PROGRESS_MS);
  const code = await run('npm', ['ci', '--no-audit', '--no-fund'], { filter: (l) => engines.take(l) });
  clearInterval(timer);
  const summary = engines.summary();
  if (summary) console.log(summary);
  if (code !== 0) {
    console.error(`npm ci failed (exit ${code}) after ${took(Date.now() - t0)}; its messages are above.`);
    return code;
  }
  console.log(`Dependencies and Node ${NODE_MAJOR} installed in ${took(Date.now() - t0)}.`);
  return 0;
}

async function buildConsole() {
  console.log('Building the web console (console/dist, once for this folder, about 20 s to 1 min)…');
  const t0 = Date.now();
  const code = await run('npm', ['run', '-s', 'build:console']);
  if (code === 0) console.log(`Web console built in ${took(Date.now() - t0)}.`);
  return code;
}

export async function main() {
  const need = missing();
  if (need.deps) {
    const code = await installDeps();
    if (code !== 0) return code;
  }
  if (need.console || !existsSync('console/dist/index.html')) return buildConsole();
  return 0;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url))
  main().then((code) => {
    process.exitCode = code;
  });
