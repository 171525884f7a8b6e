import { attributes } from './attributes';
import { bundleSize } from './bundle-size';
import { coldStart } from './cold-start';
import { consoleBench } from './console';
import { BenchContext, type BenchModule, type BenchReport } from './context';
import { guard } from './guard';
import { linking } from './linking';
import { load } from './load';
import { mcp } from './mcp';
import { memory } from './memory';
import { observability } from './observability';
import { peers } from './peers';
import { pgFirstRead } from './pg-first-read';
import { query } from './query';

/**
 * `npm run bench [-- --runs N] [-- --requests N] [-- --only name,name] [-- --strict] [-- --subset]` (`--subset`: the
 * linking benchmark on a smaller schema and every fourth question, for CI time)
 *
 * Benchmark modules, run in this order with one shared BenchContext (local store, an organization
 * with an admin key, the function bundles). To add one, write `bench/<name>.ts` exporting a
 * `BenchModule` ({ name, description, run(ctx) → { head, rows, notes?, overTarget } }) and list it here.
 */
export const benchModules: BenchModule[] = [
  bundleSize,
  coldStart,
  observability,
  attributes,
  query,
  mcp,
  load,
  pgFirstRead,
  peers,
  memory,
  guard,
  linking,
  consoleBench,
];

function args(argv: string[]) {
  const get = (flag: string) => {
    const i = argv.indexOf(flag);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const runs = Number(get('--runs') ?? 7);
  if (!Number.isInteger(runs) || runs < 1) throw new Error('--runs must be a positive integer');
  const only = get('--only')?.split(',').filter(Boolean);
  return { runs, only, strict: argv.includes('--strict') };
}

function print(m: BenchModule, r: BenchReport, seconds: number) {
  console.log(`\n## ${m.name}: ${m.description} (${seconds.toFixed(1)} s)\n`);
  const widths = r.head.map((h, i) => Math.max(h.length, ...r.rows.map((row) => row[i]?.length ?? 0)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
  console.log(line(r.head));
  console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
  for (const row of r.rows) console.log(line(row));
  for (const n of r.notes ?? []) console.log(`\n${n}`);
}

const opts = args(process.argv.slice(2));
const selected = benchModules.filter((m) => !opts.only || opts.only.includes(m.name));
if (opts.only && selected.length !== opts.only.length)
  throw new Error(`Unknown bench module; known: ${benchModules.map((m) => m.name).join(', ')}`);

const ctx = new BenchContext({ runs: opts.runs });
const over: string[] = [];
try {
  for (const m of selected) {
    const started = performance.now();
    const report = await m.run(ctx);
    print(m, report, (performance.now() - started) / 1000);
    over.push(...report.overTarget);
  }
} finally {
  await ctx.close();
}
console.log(
  over.length ? `\nOver target:\n${over.map((o) => `  - ${o}`).join('\n')}` : '\nAll figures within target.',
);
if (over.length && opts.strict) process.exitCode = 1;
