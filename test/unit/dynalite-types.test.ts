/**
 * The local store's compiled type checks (infra/local/dynalite-types.cjs) against dynalite's own
 * validations.checkTypes: for generated requests of every operation the local store serves (well-formed
 * ones, and ones with members of the wrong JSON type, unknown and null members, bad base64, strings for
 * booleans, fractions for integers, nested attribute values), both give the same result or the same
 * error, and leave the same input behind (both delete unknown and null members of what they check).
 */
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';

const require = createRequire(import.meta.url);
const compiled = require('../../infra/local/dynalite-types.cjs') as {
  checkTypes(data: unknown, types: unknown): Record<string, unknown>;
};
const original = require('dynalite/validations') as {
  checkTypes(data: unknown, types: unknown): Record<string, unknown>;
};

const OPERATIONS = [
  'batchGetItem',
  'batchWriteItem',
  'createTable',
  'deleteItem',
  'deleteTable',
  'describeTable',
  'getItem',
  'listTables',
  'putItem',
  'query',
  'scan',
  'updateItem',
  'updateTable',
  'tagResource',
  'untagResource',
  'listTagsOfResource',
  'describeTimeToLive',
];

/** A small deterministic PRNG (mulberry32). */
function prng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Descriptor = string | { type?: string; children?: unknown; [k: string]: unknown };

/** Values of every JSON type, including ones no descriptor accepts. */
function junk(r: () => number): unknown {
  const pick = [
    () => true,
    () => false,
    () => 0,
    () => 1.5,
    () => -7,
    () => 'x',
    () => '',
    () => 'TRUE',
    () => 'no',
    () => 'QUJD',
    () => 'QUJ',
    () => 'QUJE=',
    () => [],
    () => [1, 'a'],
    () => ({}),
    () => ({ S: 'a' }),
    () => null,
  ];
  return pick[Math.floor(r() * pick.length)]();
}

/** A value for `d`: usually of the right shape, sometimes not (`wrong`: chance of a wrong member). */
function valueFor(d: Descriptor, r: () => number, wrong: number, depth = 0): unknown {
  if (r() < wrong) return junk(r);
  let children = typeof d === 'object' ? d.children : undefined;
  if (typeof children === 'string') children = { type: children };
  let type = typeof d === 'string' ? d : (d.type ?? '');
  const m = /(.+?)<(.+)>$/.exec(type);
  const subtype = m?.[2];
  if (m) type = m[1];
  if (type === 'AttrStruct') return attributeValue(r, wrong, depth);
  switch (type) {
    case 'Boolean':
      return r() < 0.8 ? r() < 0.5 : ['true', 'FALSE', '1', 'yes', 'maybe'][Math.floor(r() * 5)];
    case 'Short':
    case 'Integer':
    case 'Long':
    case 'Double':
      return r() < 0.7 ? Math.floor(r() * 100) : r() * 100;
    case 'String':
      return ['PROVISIONED', 'ALL_NEW', 'loupe-main', 'pk', 'S', 'HASH', '#a = :v', 'x'][Math.floor(r() * 8)];
    case 'Blob':
      return ['QUJD', 'QUJDRA==', 'QUJ', 'QUJD!', ''][Math.floor(r() * 5)];
    case 'List':
    case 'ParameterizedList':
      return depth > 4
        ? []
        : Array.from({ length: Math.floor(r() * 3) }, () =>
            valueFor(children as Descriptor, r, wrong, depth + 1),
          );
    case 'Map':
    case 'ParameterizedMap': {
      const out: Record<string, unknown> = {};
      if (depth <= 4)
        for (let i = 0; i < Math.floor(r() * 3); i++)
          out[`k${i}`] = valueFor(children as Descriptor, r, wrong, depth + 1);
      return out;
    }
    case 'ValueStruct':
    case 'FieldStruct':
      return depth > 4 ? {} : structOf(children as Record<string, Descriptor>, r, wrong, depth + 1);
    default:
      return subtype ?? null;
  }
}

function attributeValue(r: () => number, wrong: number, depth: number): unknown {
  const kinds = ['S', 'N', 'B', 'BOOL', 'NULL', 'SS', 'NS', 'BS', 'L', 'M'];
  const kind = kinds[Math.floor(r() * kinds.length)];
  const out: Record<string, unknown> = {};
  if (kind === 'L')
    out.L =
      depth > 4 ? [] : Array.from({ length: Math.floor(r() * 3) }, () => attributeValue(r, wrong, depth + 1));
  else if (kind === 'M') {
    const m: Record<string, unknown> = {};
    if (depth <= 4)
      for (let i = 0; i < Math.floor(r() * 3); i++) m[`a${i}`] = attributeValue(r, wrong, depth + 1);
    out.M = m;
  } else if (kind === 'SS' || kind === 'NS') out[kind] = ['1', '2'];
  else if (kind === 'BS') out.BS = ['QUJD', 'QUJDRA=='];
  else if (kind === 'B') out.B = r() < 0.9 ? 'QUJD' : 'QUJ';
  else if (kind === 'BOOL' || kind === 'NULL') out[kind] = r() < 0.9 ? true : 'yes';
  else out[kind] = r() < 0.95 ? '12' : 12;
  if (r() < wrong) out[['S', 'extra', 'N'][Math.floor(r() * 3)]] = junk(r);
  if (r() < wrong) out.nothing = null;
  return out;
}

function structOf(types: Record<string, Descriptor>, r: () => number, wrong: number, depth = 0) {
  const out: Record<string, unknown> = {};
  for (const [k, d] of Object.entries(types)) if (r() < 0.6) out[k] = valueFor(d, r, wrong, depth);
  if (r() < wrong) out.Unknown = junk(r);
  if (r() < wrong) out[Object.keys(types)[0]] = null;
  return out;
}

/** What one implementation makes of `input`: its result or its error, and the input it leaves. */
function run(impl: typeof original, input: unknown, types: unknown) {
  const copy = structuredClone(input);
  try {
    return { out: impl.checkTypes(copy, types), left: copy };
  } catch (e) {
    const err = e as Error & { statusCode?: number; body?: unknown };
    return { error: { message: err.message, statusCode: err.statusCode, body: err.body }, left: copy };
  }
}

describe('dynalite type checks, compiled (local store)', () => {
  for (const op of OPERATIONS) {
    it(`${op}: the same results, errors and inputs left as dynalite's checkTypes`, () => {
      const { types } = require(`dynalite/validations/${op}`) as { types: Record<string, Descriptor> };
      const r = prng(op.length * 7919 + op.charCodeAt(0));
      let errors = 0;
      for (let i = 0; i < 400; i++) {
        const wrong = i < 100 ? 0 : i < 250 ? 0.03 : 0.15;
        const input = structOf(types, r, wrong);
        const a = run(original, input, types);
        const b = run(compiled, input, types);
        expect(b).toEqual(a);
        if (a.error) errors++;
      }
      // Both paths were exercised: some requests refused, most accepted.
      expect(errors).toBeGreaterThan(0);
      expect(errors).toBeLessThan(400);
    });
  }

  it('hand-written cases: booleans from strings, integers floored, bad base64, nested unknown members', () => {
    const { types } = require('dynalite/validations/putItem') as { types: unknown };
    const cases: unknown[] = [
      { TableName: 't', Item: { a: { S: 'x', Q: 1 }, b: { BOOL: 'yes' }, c: { NULL: '0' } } },
      { TableName: 't', Item: { a: { B: 'QUJ' } } },
      { TableName: 't', Item: { a: { B: 'QUJE' } } },
      { TableName: 't', Item: { a: { L: [{ M: { x: { N: 5 } } }] } } },
      { TableName: 't', Item: { a: { L: [null, { S: 'a' }] } } },
      { TableName: 't', Item: [] },
      { TableName: 7, Item: {} },
      { TableName: 't', Item: { a: { SS: 'x' } } },
      { TableName: 't', Item: { a: { M: [] } } },
      { TableName: 't', Item: { a: [] } },
      { TableName: 't', Item: { a: 'S' } },
      { TableName: 't', Item: { a: { BOOL: 2.5 } } },
      { TableName: 't', Item: { a: { BOOL: 'maybe' } } },
      { TableName: 't', Expected: { a: { Exists: 'true', Value: { S: 'x' } } }, Item: {} },
      { TableName: 't', Expected: { a: { AttributeValueList: [{ N: '1' }], ComparisonOperator: 'EQ' } } },
      { TableName: null, Item: null, Other: 1 },
    ];
    for (const input of cases) expect(run(compiled, input, types)).toEqual(run(original, input, types));
    const { types: scan } = require('dynalite/validations/scan') as { types: unknown };
    for (const input of [
      { TableName: 't', Limit: 2.7, Segment: 1.2 },
      { TableName: 't', Limit: '2' },
      { Limit: true },
    ])
      expect(run(compiled, input, scan)).toEqual(run(original, input, scan));
  });
});
