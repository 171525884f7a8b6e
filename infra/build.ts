import { join, relative } from 'node:path';
import { bundleFunctions } from './bundling';
import { functionEntries, ROOT } from './functions';

/** `npm run build`: bundles every function of the manifests into dist/<kind>/<name>/ and prints sizes. */
const started = Date.now();
const results = await bundleFunctions(functionEntries(), join(ROOT, 'dist'));
const kb = (n: number) => `${(n / 1024).toFixed(1)} KiB`;
const rows = results.map((r) => [
  `${r.fn.kind}/${r.fn.name}`,
  kb(r.initialBytes),
  kb(r.totalBytes),
  relative(ROOT, join(r.dir, 'index.mjs')),
]);
const head = ['function', 'loaded at start', 'all JS', 'entry'];
const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i])).join('  ');
console.log(line(head));
for (const r of rows) console.log(line(r));
console.log(`\n${results.length} functions bundled in ${Date.now() - started} ms`);
