import { type BenchModule, kib } from './context';

/** Target: a function's minified JavaScript stays under 1 MB (1,000,000 bytes). */
export const BUNDLE_TARGET_BYTES = 1_000_000;

export const bundleSize: BenchModule = {
  name: 'bundle-size',
  description: 'Minified bundle size per function (esbuild, deployment settings; source maps excluded)',
  async run(ctx) {
    const results = await ctx.bundles();
    const overTarget: string[] = [];
    const rows = results.map((r) => {
      const over = r.totalBytes >= BUNDLE_TARGET_BYTES;
      if (over)
        overTarget.push(`${r.fn.kind}/${r.fn.name}: ${kib(r.totalBytes)} of JavaScript (target < 1 MB)`);
      return [
        `${r.fn.kind}/${r.fn.name}`,
        kib(r.initialBytes),
        kib(r.totalBytes),
        over ? 'OVER TARGET' : 'ok',
      ];
    });
    return {
      head: ['function', 'loaded at start', 'all JS', 'target < 1 MB'],
      rows,
      notes: [
        '"loaded at start": index.mjs plus the chunks it imports statically; lazy chunks load on first use.',
      ],
      overTarget,
    };
  },
};
