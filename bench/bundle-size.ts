import { type BenchModule, kib } from './context';

/**
 * Target: the minified JavaScript a function loads at start (index.mjs and the chunks it imports
 * statically) stays under 1 MB (1,000,000 bytes). Lazily imported chunks (database drivers, the model
 * client) are reported too: they count toward the package size, not toward every cold start.
 */
export const BUNDLE_TARGET_BYTES = 1_000_000;

export const bundleSize: BenchModule = {
  name: 'bundle-size',
  description: 'Minified bundle size per function (esbuild, deployment settings; source maps excluded)',
  async run(ctx) {
    const results = await ctx.bundles();
    const overTarget: string[] = [];
    const rows = results.map((r) => {
      const over = r.initialBytes >= BUNDLE_TARGET_BYTES;
      if (over)
        overTarget.push(
          `${r.fn.kind}/${r.fn.name}: ${kib(r.initialBytes)} of JavaScript loaded at start (target < 1 MB)`,
        );
      return [
        `${r.fn.kind}/${r.fn.name}`,
        kib(r.initialBytes),
        kib(r.totalBytes - r.initialBytes),
        kib(r.totalBytes),
        over ? 'OVER TARGET' : 'ok',
      ];
    });
    return {
      head: ['function', 'loaded at start', 'lazy chunks', 'all JS', 'target < 1 MB at start'],
      rows,
      notes: [
        '"loaded at start": index.mjs plus the chunks it imports statically; lazy chunks (dynamic import()) load on first use.',
      ],
      overTarget,
    };
  },
};
