/**
 * The local store's parsed-expression cache (infra/local/dynalite-expressions.cjs): for every request,
 * dynalite's validation with the cache gives what it gives without it — the parsed update, condition, key
 * condition, filter and projection, and the same error for a bad request — on the first call (a miss),
 * on repeated calls (hits) and with other values of other types.
 */
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';

const require = createRequire(import.meta.url);
const { caches, state } = require('../../infra/local/dynalite-expressions.cjs') as {
  caches: Record<string, Map<string, unknown>>;
  state: { bypass: boolean };
};
const validations = require('dynalite/validations') as {
  checkTypes(data: unknown, types: unknown): Record<string, unknown>;
  checkValidations(data: unknown, types: unknown, custom: unknown, store: unknown): void;
};
const ops = Object.fromEntries(
  ['updateItem', 'putItem', 'deleteItem', 'query', 'scan', 'getItem'].map((op) => [
    op,
    require(`dynalite/validations/${op}`) as { types: unknown; custom: unknown },
  ]),
);

/** What the validations read of the store: its options. */
const STORE = { options: { maxItemSize: 400 * 1024 } };

/** What dynalite's validation makes of `input`: the parsed expressions, or the error it answers. */
function validate(op: string, input: Record<string, unknown>) {
  const v = ops[op];
  try {
    const data = validations.checkTypes(structuredClone(input), v.types);
    validations.checkValidations(data, v.types, v.custom, STORE);
    const parsed = data as Record<string, unknown>;
    return {
      updates: parsed._updates,
      condition: parsed._condition,
      keyCondition: parsed._keyCondition,
      filter: parsed._filter,
      projection: parsed._projection,
    };
  } catch (e) {
    const err = e as { body?: unknown; message?: string };
    return { error: err.body ?? err.message };
  }
}

function uncached(op: string, input: Record<string, unknown>) {
  state.bypass = true;
  try {
    return validate(op, input);
  } finally {
    state.bypass = false;
  }
}

const T = 'loupe-test';
const key = { pk: { S: 'QUEUE#a' }, sk: { S: 'MSG#1' } };
const cases: [string, string, Record<string, unknown>, 'parsed' | 'refused'][] = [
  [
    'the queue claim (update + condition)',
    'updateItem',
    {
      TableName: T,
      Key: key,
      UpdateExpression:
        'SET visibleAt = :until, gsi1sk = :g, receipt = :r, firstReceivedAt = if_not_exists(firstReceivedAt, :now) ADD receiveCount :one',
      ConditionExpression: 'attribute_exists(pk) AND visibleAt <= :now',
      ExpressionAttributeValues: {
        ':until': { N: '1700000000000' },
        ':g': { S: '001700000000000#x' },
        ':r': { S: 'r1' },
        ':now': { N: '1690000000000' },
        ':one': { N: '1' },
      },
    },
    'parsed',
  ],
  [
    'names and REMOVE',
    'updateItem',
    {
      TableName: T,
      Key: key,
      UpdateExpression: 'SET #n = :v, #m.#k = list_append(#m.#k, :l) REMOVE receipt',
      ConditionExpression: 'receipt = :r OR attribute_not_exists(#n)',
      ExpressionAttributeNames: { '#n': 'name', '#m': 'map', '#k': 'key' },
      ExpressionAttributeValues: { ':v': { S: 'x' }, ':l': { L: [{ S: 'a' }] }, ':r': { S: 'r' } },
    },
    'parsed',
  ],
  [
    'a put with a condition',
    'putItem',
    {
      TableName: T,
      Item: { ...key, expiresAt: { N: '5' } },
      ConditionExpression: 'attribute_not_exists(pk) OR expiresAt <= :now',
      ExpressionAttributeValues: { ':now': { N: '10' } },
    },
    'parsed',
  ],
  [
    'a query with key condition, filter and projection',
    'query',
    {
      TableName: T,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :p)',
      FilterExpression: 'size(#t) > :z AND contains(#t, :c)',
      ProjectionExpression: 'pk, sk, #t',
      ExpressionAttributeNames: { '#t': 'tags' },
      ExpressionAttributeValues: {
        ':pk': { S: 'A' },
        ':p': { S: 'MSG#' },
        ':z': { N: '0' },
        ':c': { S: 'x' },
      },
    },
    'parsed',
  ],
  [
    'BETWEEN (value-dependent: never cached) in order',
    'query',
    {
      TableName: T,
      KeyConditionExpression: 'pk = :pk AND sk BETWEEN :a AND :b',
      ExpressionAttributeValues: { ':pk': { S: 'A' }, ':a': { S: '0' }, ':b': { S: '9' } },
    },
    'parsed',
  ],
  [
    'BETWEEN with the bounds reversed (an error that depends on values)',
    'query',
    {
      TableName: T,
      KeyConditionExpression: 'pk = :pk AND sk BETWEEN :a AND :b',
      ExpressionAttributeValues: { ':pk': { S: 'A' }, ':a': { S: '9' }, ':b': { S: '0' } },
    },
    'refused',
  ],
  [
    'attribute_type with a bad type name',
    'deleteItem',
    {
      TableName: T,
      Key: key,
      ConditionExpression: 'attribute_type(pk, :t)',
      ExpressionAttributeValues: { ':t': { S: 'NOPE' } },
    },
    'refused',
  ],
  [
    'an unused value',
    'deleteItem',
    {
      TableName: T,
      Key: key,
      ConditionExpression: 'receipt = :r',
      ExpressionAttributeValues: { ':r': { S: 'r' }, ':extra': { S: 'x' } },
    },
    'refused',
  ],
  [
    'an undefined value',
    'deleteItem',
    {
      TableName: T,
      Key: key,
      ConditionExpression: 'receipt = :r',
      ExpressionAttributeValues: { ':x': { S: 'r' } },
    },
    'refused',
  ],
  [
    'a syntax error',
    'updateItem',
    { TableName: T, Key: key, UpdateExpression: 'SET = :v', ExpressionAttributeValues: { ':v': { S: 'x' } } },
    'refused',
  ],
  [
    'an operand of the wrong type (list_append of a number)',
    'updateItem',
    {
      TableName: T,
      Key: key,
      UpdateExpression: 'SET l = list_append(l, :n)',
      ExpressionAttributeValues: { ':n': { N: '1' } },
    },
    'refused',
  ],
  [
    'a reserved word',
    'updateItem',
    {
      TableName: T,
      Key: key,
      UpdateExpression: 'SET size = :v',
      ExpressionAttributeValues: { ':v': { S: 'x' } },
    },
    'refused',
  ],
];

describe('local store: parsed-expression cache', () => {
  it.each(cases)(
    '%s: the same parse or error, first call and repeated, as without the cache',
    (_name, op, input, outcome) => {
      const expected = uncached(op, input);
      expect('error' in expected ? 'refused' : 'parsed', JSON.stringify(expected)).toBe(outcome);
      expect(validate(op, input)).toEqual(expected); // miss
      expect(validate(op, input)).toEqual(expected); // hit
      expect(validate(op, input)).toEqual(expected);
    },
  );

  it('a hit carries the call’s own values, and a change of a value’s type is a new entry', () => {
    const base = cases[0][2];
    const other = {
      ...base,
      ExpressionAttributeValues: {
        ':until': { N: '42' },
        ':g': { S: 'other' },
        ':r': { S: 'r2' },
        ':now': { N: '41' },
        ':one': { N: '7' },
      },
    };
    validate('updateItem', base);
    const hit = validate('updateItem', other);
    expect(hit).toEqual(uncached('updateItem', other));
    expect(JSON.stringify(hit)).toContain('"r2"');
    expect(JSON.stringify(hit)).not.toContain('"r1"');
    // :g as a number: dynalite's type checks may answer differently, so it is parsed (and kept) apart.
    const size = caches.updateParser.size;
    const retyped = {
      ...other,
      ExpressionAttributeValues: { ...other.ExpressionAttributeValues, ':g': { N: '1' } },
    };
    expect(validate('updateItem', retyped)).toEqual(uncached('updateItem', retyped));
    expect(caches.updateParser.size).toBe(size + 1);
  });

  it('what a caller does to a parsed tree does not reach the cache', () => {
    const input = cases[2][2];
    const first = validate('putItem', input) as { condition: { expression: { args: unknown[] } } };
    first.condition.expression.args.length = 0;
    expect(validate('putItem', input)).toEqual(uncached('putItem', input));
  });

  it('keeps parsed forms of the cacheable expressions only', () => {
    const between = cases[4][2];
    validate('query', between);
    const keys = [...caches.conditionParser.entries()]
      .filter(([k]) => k.includes('BETWEEN'))
      .map(([, v]) => v);
    expect(keys.length).toBeGreaterThan(0);
    expect(keys.every((v) => v === null)).toBe(true);
  });
});
