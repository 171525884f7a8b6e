import { afterAll, describe, expect, it } from 'vitest';
import { coldStart } from '../../bench/cold-start';
import { BenchContext } from '../../bench/context';
import { functionEntries } from '../../infra/functions';
import { sharedBundles } from '../support/bundles';

// The bundles are the run's shared build (test/support/bundles.ts), copied into the bench's folder.
const ctx = new BenchContext({ runs: 1, bundle: sharedBundles });
afterAll(() => ctx.close());

/**
 * The cold-start bench itself (`npm run bench -- --only cold-start`), with one run: every HTTP bundle,
 * copied out of the repository and started in a deployed function's environment (LOUPE_RUNTIME=aws,
 * the stack's variables, Lambda's), answers its authenticated request with 2xx, so the bench measures
 * real answers. Times are printed by the bench, never asserted here.
 */
describe('the cold-start bench', () => {
  it('starts every HTTP function in a deployed environment and gets a 2xx answer from each', async () => {
    const report = await coldStart.run(ctx);
    const http = functionEntries().filter((f) => f.kind === 'http');
    expect(report.rows.map((r) => r[0])).toEqual(http.map((f) => `http/${f.name}`));
    for (const row of report.rows)
      expect(row[1]).toMatch(
        row[0] === 'http/mcp' ? /^POST \/mcp \(tools\/list\) → 200$/ : /^GET \/\S* → 2\d\d$/,
      );
    expect(report.notes?.join('\n')).toMatch(/LOUPE_RUNTIME=aws/);
  }, 300_000);
});
