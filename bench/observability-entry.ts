import { endpoint } from '../shared/http/endpoint';
import { httpHandler } from '../shared/http/handler';
import { on } from '../shared/http/route';
import { db } from '../shared/platform/db/store';
import { count, observe } from '../shared/platform/measures';

/**
 * The request bench/observability.ts measures, bundled like a function (infra/bundling.ts): the shared
 * HTTP stack, one store read (a DynamoDB subsegment when sampled) and the two measures of a query (two
 * EMF lines). No key: authentication's store calls would only add noise to the difference.
 */
const probe = endpoint({
  method: 'GET',
  path: '/bench/observability',
  tag: 'Bench',
  auth: 'none',
  summary: 'One store read and the measures of one query',
});

export const handler = httpHandler([
  on(probe, async () => {
    const started = performance.now();
    const item = await db.get('BENCH#observability', 'PROBE');
    count('queriesRun', { source: 'query', outcome: 'success' });
    observe('queryDuration', performance.now() - started, {});
    return { data: { found: !!item } };
  }),
]);
