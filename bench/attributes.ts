import { marshall as sdkMarshall, unmarshall as sdkUnmarshall } from '@aws-sdk/util-dynamodb';
import { marshall, unmarshall } from '../shared/platform/db/attributes';
import { type BenchModule, median } from './context';

/**
 * Target: the service's attribute-value converter (shared/platform/db/attributes.ts) takes at most half
 * the time of @aws-sdk/util-dynamodb (the baseline, with the options the service used) for a document's
 * marshall plus the unmarshall of its stored form, per item. In process, no store: two items of the read
 * path (a connection as UpdateItem ALL_NEW returns it, a query-history entry as PutItem writes it), the
 * stored form as DynamoDB's JSON answer parses, and as the local store answers (dynalite copies items
 * into null-prototype objects). Rounds interleave the two converters; medians over `--runs` rounds.
 */
const TARGET_RATIO = 0.5;
const SDK_OPTIONS = { removeUndefinedValues: true, convertClassInstanceToMap: false };

const ORG = '01JD8Y3K4M5N6P7Q8R9S0T1V2W';
const CONN = '01JD8Y3K4M5N6P7Q8R9S0T1V2X';

/** A connection item (connections/store.ts), health-checked, with a stored diagnosis. */
const connection = {
  pk: `ORG#${ORG}`,
  sk: `CONN#${CONN}`,
  kind: 'connection',
  querySeq: 1234,
  id: CONN,
  orgId: ORG,
  name: 'Production analytics',
  type: 'postgresql',
  host: 'db.internal.example.com',
  port: 5432,
  database: 'analytics',
  username: 'loupe_reader',
  passwordCipher: `v1.${'A'.repeat(160)}`,
  sslEnabled: true,
  readOnly: true,
  allowedFunctions: ['public.safe_fn'],
  isActive: true,
  deactivatedBy: null,
  lastTestedAt: '2026-11-27T10:00:00.000Z',
  lastError: null,
  lastErrorDiagnosis: {
    stage: 'connect',
    fault: 'network',
    title: 'Host unreachable',
    explanation: 'The host did not answer within the timeout.',
    fixSteps: ['Check the host name', 'Allow Loupe through the firewall'],
    retryable: true,
  },
  schemaUpdatedAt: '2026-11-27T09:00:00.000Z',
  healthFailures: 0,
  lastHealthSlot: '2026-11-27T10:00',
  version: 3,
  createdAt: '2026-11-01T00:00:00.000Z',
  updatedAt: '2026-11-27T10:00:00.000Z',
  gsi1pk: 'ACTIVECONN',
  gsi1sk: `ORG#${ORG}#CONN#${CONN}`,
};

/** A query-history entry (connections/history.ts) with its outcome. */
const history = {
  pk: `ORG#${ORG}#CONN#${CONN}`,
  sk: 'QH#000000001234',
  kind: 'query',
  id: '01JD8Y3K4M5N6P7Q8R9S0T1V2Y',
  sequence: 1234,
  createdAt: '2026-11-27T10:00:00.000Z',
  connectionId: CONN,
  source: 'query',
  question: null,
  sql: 'SELECT id, name FROM customers WHERE created_at > now() - interval 7 day',
  status: 'SUCCESS',
  rowCount: 42,
  executionTime: 3,
  truncated: false,
  error: null,
  errorCode: null,
  userId: '01JD8Y3K4M5N6P7Q8R9S0T1V2Z',
};

/** As dynalite's deepClone copies an item: null-prototype objects. */
function nullPrototype(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(nullPrototype);
  if (!v || typeof v !== 'object') return v;
  const out = Object.create(null);
  for (const k in v) out[k] = nullPrototype((v as Record<string, unknown>)[k]);
  return out;
}

type Converter = { marshall(doc: unknown): any; unmarshall(map: any): unknown };
const converters: Record<'sdk' | 'ours', Converter> = {
  sdk: {
    marshall: (doc) => sdkMarshall(doc as Record<string, unknown>, SDK_OPTIONS),
    unmarshall: sdkUnmarshall,
  },
  ours: { marshall, unmarshall },
};

/** Microseconds per call of `fn`, over enough calls to take ~20 ms. */
function time(fn: () => unknown): number {
  let n = 1;
  for (;;) {
    const t = performance.now();
    for (let i = 0; i < n; i++) fn();
    const elapsed = performance.now() - t;
    if (elapsed > 20) return (elapsed * 1000) / n;
    n *= 2;
  }
}

export const attributes: BenchModule = {
  name: 'attributes',
  description: "Attribute-value conversion: the service's attributes.ts against @aws-sdk/util-dynamodb",
  async run(ctx) {
    const items = { connection, 'query history': history };
    const cases: { item: string; step: string; call: (c: Converter) => unknown }[] = [];
    for (const [item, doc] of Object.entries(items)) {
      const wire = sdkMarshall(doc, SDK_OPTIONS);
      const parsed = JSON.parse(JSON.stringify(wire));
      const local = nullPrototype(wire);
      cases.push(
        { item, step: 'marshall', call: (c) => c.marshall(doc) },
        { item, step: 'unmarshall (DynamoDB JSON)', call: (c) => c.unmarshall(parsed) },
        { item, step: 'unmarshall (local store)', call: (c) => c.unmarshall(local) },
      );
    }
    const samples = cases.map(() => ({ sdk: [] as number[], ours: [] as number[] }));
    for (const c of cases) for (const k of ['sdk', 'ours'] as const) time(() => c.call(converters[k])); // warm-up
    for (let r = 0; r < ctx.runs; r++)
      cases.forEach((c, i) => {
        const order = r % 2 ? (['ours', 'sdk'] as const) : (['sdk', 'ours'] as const);
        for (const k of order) samples[i][k].push(time(() => c.call(converters[k])));
      });
    const us = (n: number) => `${n.toFixed(2)} µs`;
    const rows: string[][] = [];
    const overTarget: string[] = [];
    const totals = new Map<string, { sdk: number; ours: number; json: { sdk: number; ours: number } }>();
    cases.forEach((c, i) => {
      const sdk = median(samples[i].sdk);
      const ours = median(samples[i].ours);
      rows.push([c.item, c.step, us(sdk), us(ours), `${(ours / sdk).toFixed(2)}×`, '']);
      const t = totals.get(c.item) ?? { sdk: 0, ours: 0, json: { sdk: 0, ours: 0 } };
      if (c.step !== 'unmarshall (local store)') {
        t.json.sdk += sdk;
        t.json.ours += ours;
      }
      if (c.step !== 'unmarshall (DynamoDB JSON)') {
        t.sdk += sdk;
        t.ours += ours;
      }
      totals.set(c.item, t);
    });
    for (const [item, t] of totals)
      for (const [label, pair] of [
        ['marshall + unmarshall, local store', t],
        ['marshall + unmarshall, DynamoDB JSON', t.json],
      ] as const) {
        const ratio = pair.ours / pair.sdk;
        const over = ratio > TARGET_RATIO;
        if (over)
          overTarget.push(
            `attributes: ${item} ${label} ${ratio.toFixed(2)}× util-dynamodb's time (target ≤ 0.5×)`,
          );
        rows.push([
          item,
          label,
          us(pair.sdk),
          us(pair.ours),
          `${ratio.toFixed(2)}×`,
          over ? 'OVER TARGET' : 'ok',
        ]);
      }
    return {
      head: ['item', 'step', 'util-dynamodb', 'attributes.ts', 'ratio', 'target ≤ 0.5× (totals)'],
      rows,
      notes: [
        `Medians of ${ctx.runs} interleaved rounds, each timing ~20 ms of calls in this process. "local store": the item as dynalite answers it in process (null-prototype objects, as UpdateItem ALL_NEW returns it); "DynamoDB JSON": as parsed from DynamoDB's HTTP answer.`,
      ],
      overTarget,
    };
  },
};
