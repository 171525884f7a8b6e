import { afterAll, describe, expect, it } from 'vitest';
import { BenchContext } from '../../bench/context';
import { observability } from '../../bench/observability';

const ctx = new BenchContext({ runs: 1 });
afterAll(() => ctx.close());

/**
 * The observability bench (`npm run bench -- --only observability`) with one run: every variant's bundle
 * starts and answers its request, and only the sampled ones send X-Ray subsegments (one per request:
 * the request reads the store once). Times are printed by the bench, never asserted here.
 */
describe('the observability bench', () => {
  it('measures every variant, and only sampled requests send subsegments to the daemon', async () => {
    const report = await observability.run(ctx);
    const byName = new Map(report.rows.map((r) => [r[0], r]));
    expect([...byName.keys()]).toEqual([
      'without metrics and tracing (baseline)',
      'metrics, tracing off',
      'metrics, tracing on, not sampled',
      'metrics, tracing on, sampled',
      'sampled, Powertools and X-Ray SDK as published',
    ]);
    const datagrams = (name: string) => Number(byName.get(name)![7]);
    expect(datagrams('without metrics and tracing (baseline)')).toBe(0);
    expect(datagrams('metrics, tracing off')).toBe(0);
    expect(datagrams('metrics, tracing on, not sampled')).toBe(0);
    // One per request (UDP: a loaded machine may drop some, so only their arrival is checked).
    expect(datagrams('metrics, tracing on, sampled')).toBeGreaterThan(0);
    expect(datagrams('sampled, Powertools and X-Ray SDK as published')).toBeGreaterThan(0);
    for (const row of report.rows) expect(row[1]).toMatch(/^\d+\.\d ms$/);
  }, 600_000);
});
