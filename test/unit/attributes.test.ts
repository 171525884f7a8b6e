import {
  NumberValueImpl,
  marshall as sdkMarshall,
  unmarshall as sdkUnmarshall,
} from '@aws-sdk/util-dynamodb';
import { describe, expect, it } from 'vitest';
import { marshall, unmarshall } from '../../shared/platform/db/attributes';

/**
 * Differential test of the service's attribute-value converter (shared/platform/db/attributes.ts) against
 * @aws-sdk/util-dynamodb with the options the service used: every input goes through both, and the
 * outcomes must be the same: the same output (structure, key order, prototypes, number vs bigint, -0,
 * the very same binary objects) or the same error (class and message). Hand-written edge cases, then
 * thousands of generated values (seeded, so a failure repeats).
 */

const SDK_OPTIONS = { removeUndefinedValues: true, convertClassInstanceToMap: false };

type Outcome = { value: unknown } | { error: { type: string; message: string } };

function outcome(fn: () => unknown): Outcome {
  try {
    return { value: fn() };
  } catch (e) {
    const err = e as Error;
    return { error: { type: err?.constructor?.name ?? typeof e, message: String(err?.message ?? e) } };
  }
}

/**
 * A comparable picture of an output: types spelled out, keys in order, prototypes, holes; objects of the
 * input (binary values, anything passed through) by identity (`ids` shared by both sides), the rest by
 * structure.
 */
function shape(v: unknown, inputs: Set<unknown>, ids: Map<unknown, number>): unknown {
  switch (typeof v) {
    case 'number':
      return ['number', Object.is(v, -0) ? '-0' : String(v)];
    case 'bigint':
      return ['bigint', v.toString()];
    case 'string':
    case 'boolean':
      return [typeof v, v];
    case 'undefined':
      return ['undefined'];
    case 'symbol':
    case 'function':
      return ['ref', ref(v, ids)];
  }
  if (v === null) return ['null'];
  if (inputs.has(v)) return ['ref', ref(v, ids)];
  const obj = v as any;
  const proto = protoShape(Object.getPrototypeOf(obj), inputs, ids);
  if (Array.isArray(obj))
    return [
      'array',
      proto,
      obj.length,
      Array.from({ length: obj.length }, (_, i) => (i in obj ? shape(obj[i], inputs, ids) : 'hole')),
    ];
  if (Object.getPrototypeOf(obj) === Set.prototype)
    return ['set', [...obj].map((m) => shape(m, inputs, ids))];
  return [
    'object',
    proto,
    Reflect.ownKeys(obj).map((k) => [
      String(k),
      shape(Object.getOwnPropertyDescriptor(obj, k)?.value, inputs, ids),
    ]),
  ];
}

const builtins = new Map<unknown, string>([
  [null, 'null'],
  [Object.prototype, 'Object.prototype'],
  [Array.prototype, 'Array.prototype'],
  [Set.prototype, 'Set.prototype'],
]);

function protoShape(p: unknown, inputs: Set<unknown>, ids: Map<unknown, number>): unknown {
  return builtins.get(p) ?? (inputs.has(p) ? ['ref', ref(p, ids)] : shape(p, inputs, ids));
}

function ref(o: unknown, ids: Map<unknown, number>): number {
  if (!ids.has(o)) ids.set(o, ids.size + 1);
  return ids.get(o) as number;
}

/** Every object reachable from an input (own members, set members, map keys and values, prototypes). */
function objectsOf(v: unknown, seen = new Set<unknown>()): Set<unknown> {
  if (v === null || (typeof v !== 'object' && typeof v !== 'function') || seen.has(v) || builtins.has(v))
    return seen;
  seen.add(v);
  objectsOf(Object.getPrototypeOf(v), seen);
  if (ArrayBuffer.isView(v) || v instanceof ArrayBuffer) return seen;
  for (const k of Reflect.ownKeys(v as object)) objectsOf(Object.getOwnPropertyDescriptor(v, k)?.value, seen);
  if (v instanceof Set) for (const m of v) objectsOf(m, seen);
  if (v instanceof Map)
    for (const [k, m] of v) {
      objectsOf(k, seen);
      objectsOf(m, seen);
    }
  return seen;
}

function same(ours: Outcome, theirs: Outcome, input: unknown, label: string) {
  if ('error' in theirs) {
    expect('error' in ours ? ours.error : { unexpectedValue: ours.value }, label).toEqual(theirs.error);
    return;
  }
  expect('error' in ours ? ours.error : 'a value', label).toEqual('a value');
  const inputs = objectsOf(input);
  const ids = new Map<unknown, number>();
  const expected = shape(theirs.value, inputs, ids);
  expect(shape((ours as { value: unknown }).value, inputs, ids), label).toEqual(expected);
}

const sdkM = (doc: unknown) => outcome(() => sdkMarshall(doc as any, SDK_OPTIONS));
const ourM = (doc: unknown) => outcome(() => marshall(doc));
const sdkU = (map: unknown) => outcome(() => sdkUnmarshall(map as any));
const ourU = (map: unknown) => outcome(() => unmarshall(map));

function checkMarshall(doc: unknown, label: string) {
  const theirs = sdkM(doc);
  same(ourM(doc), theirs, doc, `marshall ${label}`);
  // Round trip: what the SDK's marshall made, read back by both; and each converter's own round trip.
  if ('value' in theirs && isMapLike(theirs.value)) {
    same(ourU(theirs.value), sdkU(theirs.value), theirs.value, `unmarshall(marshall ${label})`);
    same(
      outcome(() => unmarshall(marshall(doc))),
      outcome(() => sdkUnmarshall(sdkMarshall(doc as any, SDK_OPTIONS))),
      doc,
      `round trip ${label}`,
    );
  }
  return theirs;
}

const isMapLike = (v: unknown) => !!v && typeof v === 'object' && !Array.isArray(v);

function checkUnmarshall(map: unknown, label: string) {
  const theirs = sdkU(map);
  same(ourU(map), theirs, map, `unmarshall ${label}`);
  return theirs;
}

class Point {
  x = 1;
  y = 2;
}
class BigNumber extends NumberValueImpl {}
class MySet extends Set {}
class MyArray extends Array {}
const withOwn = (obj: object, key: string, value: unknown) =>
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
// biome-ignore lint/suspicious/noSparseArray: a hole on purpose
const sparse = [1, , 3];
const bytes = new Uint8Array([0, 1, 2, 255]);

/** Documents (marshall's input), each with a name. */
const documents: [string, unknown][] = [
  ['empty object', {}],
  ['strings', { a: 'x', empty: '', uni: 'ünï 日本 🎉', nul: '\u0000', long: 'x'.repeat(5000) }],
  [
    'keys',
    { '': 1, ' ': 2, '0': 3, '10': 4, '2': 5, 'a.b': 6, '#x': 7, ü: 8, toString: 9, hasOwnProperty: 10 },
  ],
  ['numbers', { z: 0, nz: -0, i: 42, n: -7, f: 2.71, tiny: 1e-7, e: 1e15, max: Number.MAX_SAFE_INTEGER }],
  ['min safe', { min: Number.MIN_SAFE_INTEGER, eps: Number.EPSILON, minv: Number.MIN_VALUE }],
  ['NaN', { n: Number.NaN }],
  ['Infinity', { n: Number.POSITIVE_INFINITY }],
  ['-Infinity', { n: Number.NEGATIVE_INFINITY }],
  ['2^53', { n: 2 ** 53 }],
  ['-(2^53)', { n: -(2 ** 53) }],
  ['1e21', { n: 1e21 }],
  ['unsafe in list', { l: [1, 2, 2 ** 60] }],
  ['NaN deep', { m: { l: [{ x: Number.NaN }] } }],
  ['bigint', { b: 1n, n: -5n, huge: 123456789012345678901234567890n, z: 0n }],
  ['booleans and null', { t: true, f: false, n: null }],
  ['Uint8Array', { b: bytes, e: new Uint8Array(0) }],
  ['Buffer', { b: Buffer.from('hello') }],
  ['view with offset', { b: new Uint8Array(new Uint8Array([9, 8, 7, 6]).buffer, 1, 2) }],
  [
    'ArrayBuffer, DataView, typed arrays',
    {
      a: new ArrayBuffer(3),
      d: new DataView(new ArrayBuffer(2)),
      f: new Float32Array(2),
      i: new Int16Array(1),
      big: new BigInt64Array(1),
    },
  ],
  ['Blob', { b: new Blob(['x']) }],
  ['lists', { l: [1, 'a', null, true, [2, [3]], { x: 1 }], e: [] }],
  ['undefined in list', { l: [undefined, 1, undefined, 'x', undefined] }],
  ['only undefined in list', { l: [undefined] }],
  ['functions in list', { l: [() => 1, 2, function named() {}] }],
  ['sparse list', { l: sparse }],
  ['nested maps', { m: { a: { b: { c: { d: 'deep' } } } } }],
  ['undefined members', { a: undefined, b: 1, c: { d: undefined, e: { f: undefined } } }],
  ['function members', { f: () => 1, g: 2, h: { i: class {} } }],
  ['string set', { s: new Set(['a', 'b', '']) }],
  ['number set', { s: new Set([1, 2.5, -3, 0]) }],
  ['bigint set', { s: new Set([1n, 12345678901234567890123n]) }],
  ['binary set', { s: new Set([bytes, Buffer.from('x'), new ArrayBuffer(1)]) }],
  ['empty set', { s: new Set() }],
  ['set of undefined', { s: new Set([undefined]) }],
  ['set with undefined', { s: new Set(['a', undefined, 'b']) }],
  ['number set with NaN', { s: new Set([1, Number.NaN]) }],
  ['number set with unsafe', { s: new Set([1, 2 ** 55]) }],
  ['number set, string member', { s: new Set([1, 'x', '2']) }],
  ['number set, null member', { s: new Set([1, null]) }],
  ['number set, bigint member', { s: new Set([1, 2n ** 70n]) }],
  ['number set, symbol member', { s: new Set([1, Symbol('s')]) }],
  ['string set, number member', { s: new Set(['a', 1, true]) }],
  ['string set, null member', { s: new Set(['a', null]) }],
  ['string set, object member', { s: new Set(['a', { x: 1 }]) }],
  ['bigint set, number member', { s: new Set([1n, 2.5]) }],
  ['binary set, string member', { s: new Set([bytes, 'x']) }],
  ['boolean set', { s: new Set([true]) }],
  ['null set', { s: new Set([null, 'a']) }],
  ['object set', { s: new Set([{ a: 1 }]) }],
  ['set of sets', { s: new Set([new Set(['a'])]) }],
  ['boxed number set', { s: new Set([new Number(1)]) }],
  ['function set', { s: new Set([() => 1]) }],
  ['Set subclass', { s: new MySet(['a']) }],
  [
    'Map',
    {
      m: new Map<unknown, unknown>([
        ['a', 1],
        ['b', undefined],
        ['c', () => 1],
        ['d', { e: 'f' }],
      ]),
    },
  ],
  [
    'Map with odd keys',
    {
      m: new Map<unknown, unknown>([
        [1, 'one'],
        [{}, 'obj'],
        [null, 'null'],
        [true, 't'],
      ]),
    },
  ],
  [
    'Map with __proto__ key',
    {
      m: new Map([
        ['__proto__', 'x'],
        ['a', 'y'],
      ]),
    },
  ],
  ['empty Map', { m: new Map() }],
  ['null-prototype object', { o: Object.assign(Object.create(null), { a: 1, b: undefined }) }],
  ['inherited members', { o: Object.assign(Object.create({ inherited: 'yes' }), { own: 1 }) }],
  [
    'non-enumerable member',
    { o: Object.defineProperty({ a: 1 }, 'hidden', { value: 2, enumerable: false }) },
  ],
  ['symbol-keyed member', { o: { a: 1, [Symbol('k')]: 2 } }],
  ['own __proto__ member', withOwn({ a: 1 }, '__proto__', 'x')],
  ['own __proto__ map member', withOwn({ a: 1 }, '__proto__', { S: 'x' })],
  ['JSON __proto__', JSON.parse('{"__proto__": {"b": 2}, "c": 3}')],
  ['constructor: string', { constructor: 'x' }],
  ['constructor: 0', { constructor: 0, a: 1 }],
  ['constructor: 1', { constructor: 1 }],
  ['constructor named Set', { constructor: { name: 'Set' } }],
  ['constructor named Map', { constructor: { name: 'Map' } }],
  ['constructor named Object', { constructor: { name: 'Object' }, a: 1 }],
  ['constructor named Uint8Array', { constructor: { name: 'Uint8Array' } }],
  ['nested constructor: string', { m: { constructor: 'x' } }],
  ['Date', { d: new Date(0) }],
  ['invalid Date', { d: new Date(Number.NaN) }],
  ['class instance', { p: new Point() }],
  ['RegExp', { r: /x/g }],
  ['Error', { e: new Error('boom') }],
  ['Promise', { p: Promise.resolve(1) }],
  ['WeakMap', { w: new WeakMap() }],
  ['boxed string', { s: new String('boxed') }],
  ['boxed number', { n: new Number(5) }],
  ['boxed NaN', { n: new Number(Number.NaN) }],
  ['boxed unsafe number', { n: new Number(2 ** 60) }],
  ['boxed boolean', { b: new Boolean(false) }],
  ['boxed bigint', { b: Object(5n) }],
  ['symbol member', { s: Symbol('x') }],
  ['NumberValue', { n: NumberValueImpl.from('123456789012345678901234567890') }],
  ['NumberValue subclass', { n: new BigNumber('1.5') }],
  [
    'NumberValue set',
    { s: new Set([NumberValueImpl.from('1'), NumberValueImpl.from('99999999999999999999')]) },
  ],
  ['NumberValue set, string member', { s: new Set([NumberValueImpl.from('1'), 'x']) }],
  ['Array subclass', { l: MyArray.from([1, 2]) }],
  ['deep nesting', { l: [[[[[[[[[[{ a: [[['deep']]] }]]]]]]]]]] }],
  // Top-level values that are not plain objects.
  ['top: undefined', undefined],
  ['top: null', null],
  ['top: string', 'text'],
  ['top: empty string', ''],
  ['top: number', 12],
  ['top: NaN', Number.NaN],
  ['top: unsafe', 2 ** 54],
  ['top: bigint', 9n],
  ['top: boolean', false],
  ['top: list', [1, undefined, 'a']],
  ['top: empty list', []],
  ['top: set', new Set(['a'])],
  ['top: empty set', new Set()],
  ['top: Map', new Map([['a', 1]])],
  ['top: binary', bytes],
  ['top: Date', new Date(1)],
  ['top: class instance', new Point()],
  ['top: function', function f() {}],
  ['top: symbol', Symbol('top')],
  ['top: NumberValue', NumberValueImpl.from('7')],
  ['top: null prototype', Object.create(null)],
  ['top: boxed string', new String('b')],
];

/** A map of many members built one by one, then one deleted (a dictionary-mode object in V8). */
function manyDeleted() {
  const m: Record<string, unknown> = {};
  for (let i = 0; i < 40; i++) m[`k${i}`] = { S: `v${i}` };
  delete m.k3;
  return m;
}

/** Attribute-value maps (unmarshall's input), each with a name. */
const wireMaps: [string, unknown][] = [
  ['empty', {}],
  [
    'every type',
    {
      s: { S: 'x' },
      n: { N: '1' },
      b: { B: bytes },
      t: { BOOL: true },
      z: { NULL: true },
      l: { L: [{ S: 'a' }, { N: '2' }] },
      m: { M: { k: { S: 'v' } } },
      ss: { SS: ['a', 'b'] },
      ns: { NS: ['1', '2.5'] },
      bs: { BS: [bytes] },
    },
  ],
  [
    'numbers',
    {
      a: { N: '0' },
      b: { N: '-0' },
      c: { N: '1.5' },
      d: { N: '1e2' },
      e: { N: '-7' },
      f: { N: '9007199254740991' },
      g: { N: '-9007199254740991' },
      h: { N: '0.1' },
      i: { N: '1E-5' },
    },
  ],
  ['2^53', { n: { N: '9007199254740992' } }],
  ['2^53 + 1', { n: { N: '9007199254740993' } }],
  ['-(2^53 + 1)', { n: { N: '-9007199254740993' } }],
  ['30 digits', { n: { N: '123456789012345678901234567890' } }],
  ['large with exponent', { n: { N: '1e20' } }],
  ['large negative with exponent', { n: { N: '-1e20' } }],
  ['large with fraction', { n: { N: '12345678901234567890.5' } }],
  ['large with .0', { n: { N: '12345678901234567890.0' } }],
  ['beyond double', { n: { N: '1e400' } }],
  ['beyond double, negative', { n: { N: '-1e400' } }],
  ['Infinity text', { n: { N: 'Infinity' } }],
  ['NaN text', { n: { N: 'NaN' } }],
  ['not a number', { n: { N: 'abc' } }],
  ['empty number', { n: { N: '' } }],
  ['spaces', { n: { N: ' 42 ' } }],
  ['hex', { n: { N: '0x1f' } }],
  ['large hex', { n: { N: '0x1fffffffffffffff' } }],
  ['large with spaces', { n: { N: ' 123456789012345678901 ' } }],
  ['number, not text', { n: { N: 5 } }],
  ['large number, not text', { n: { N: 1e20 } }],
  ['large fractional number, not text', { n: { N: 1.5e300 } }],
  ['number set with large members', { s: { NS: ['1', '9007199254740993', '1.5'] } }],
  ['number set, bad member', { s: { NS: ['1', '1e30'] } }],
  ['number set, duplicates', { s: { NS: ['1', '1', '1.0'] } }],
  ['string set, duplicates', { s: { SS: ['a', 'a'] } }],
  ['empty sets', { s: { SS: [] }, n: { NS: [] }, b: { BS: [] } }],
  ['empty string, list, map', { s: { S: '' }, l: { L: [] }, m: { M: {} } }],
  ['BOOL odd values', { a: { BOOL: 'false' }, b: { BOOL: 0 }, c: { BOOL: false }, d: { BOOL: null } }],
  ['NULL false', { n: { NULL: false } }],
  ['S not a string', { s: { S: 5 } }],
  ['S null', { s: { S: null } }],
  ['B as base64 text', { b: { B: 'AAEC' } }],
  ['unknown type', { x: { X: 'y' } }],
  ['lowercase type', { x: { s: 'y' } }],
  ['no type', { x: {} }],
  ['undefined type value', { x: { S: undefined } }],
  ['undefined then defined', { x: { S: undefined, N: '3' } }],
  ['two types', { x: { S: 'a', N: '1' } }],
  ['two types, other order', { x: { N: '1', S: 'a' } }],
  ['attribute null', { x: null }],
  ['attribute undefined', { x: undefined }],
  ['attribute string', { x: 'abc' }],
  ['attribute number', { x: 5 }],
  ['attribute list', { x: [{ S: 'a' }] }],
  ['L not a list', { x: { L: 'nope' } }],
  ['L null', { x: { L: null } }],
  ['L with a bad member', { x: { L: [{ S: 'a' }, { Q: 1 }] } }],
  ['M null', { x: { M: null } }],
  ['M a string', { x: { M: 'ab' } }],
  ['NS not a list', { x: { NS: 3 } }],
  ['SS not a list', { x: { SS: 'a' } }],
  ['BS not a list', { x: { BS: {} } }],
  ['number with BigInt in message', { x: { N: 'x' }, y: { NULL: 1n } }],
  ['no value with bigint', { x: { S: undefined, extra: undefined } }],
  ['__proto__ member', JSON.parse('{"__proto__": {"S": "x"}, "a": {"N": "1"}}')],
  ['__proto__ in M', { m: { M: JSON.parse('{"__proto__": {"M": {"b": {"S": "y"}}}}') } }],
  [
    '__proto__ member in the middle',
    JSON.parse('{"a": {"N": "1"}, "__proto__": {"S": "x"}, "b": {"S": "y"}}'),
  ],
  ['symbol-keyed member', { a: { S: 'x' }, [Symbol('s')]: { S: 'y' }, b: { N: '2' } }],
  ['symbol-keyed member in M', { m: { M: { a: { S: 'x' }, [Symbol('s')]: { S: 'y' } } } }],
  ['non-enumerable member', Object.defineProperty({ a: { S: 'x' } }, 'hidden', { value: { S: 'h' } })],
  [
    'getter member',
    Object.defineProperty({ a: { S: 'x' } }, 'g', { get: () => ({ N: '7' }), enumerable: true }),
  ],
  [
    'many members (JSON)',
    JSON.parse(
      JSON.stringify(Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`k${i}`, { N: String(i) }]))),
    ),
  ],
  ['many members, one deleted', manyDeleted()],
  [
    'many members, one bad',
    { ...Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`k${i}`, { S: 'v' }])), bad: { Z: 1 } },
  ],
  ['null-prototype map', Object.assign(Object.create(null), { a: { S: 'x' } })],
  ['null-prototype value', { a: Object.assign(Object.create(null), { N: '2' }) }],
  ['inherited type', { a: Object.create({ S: 'inherited' }) }],
  ['integer-like keys', { '2': { S: 'b' }, '1': { S: 'a' }, x: { S: 'c' } }],
  ['deep nesting', { l: { L: [{ L: [{ M: { a: { L: [{ M: { b: { N: '9007199254740993' } } }] } } }] }] } }],
  // Top-level values that are not maps.
  ['top: undefined', undefined],
  ['top: null', null],
  ['top: string', 'abc'],
  ['top: number', 7],
  ['top: list', [{ S: 'a' }]],
];

describe('attribute values: the service converter does what @aws-sdk/util-dynamodb does', () => {
  it('on hand-written documents (marshall, and the round trip)', () => {
    for (const [label, doc] of documents) checkMarshall(doc, label);
  });

  it('on hand-written wire maps (unmarshall)', () => {
    for (const [label, map] of wireMaps) checkUnmarshall(map, label);
  });

  it('states the rules that matter to the service (anchors, in case util-dynamodb changes)', () => {
    expect(marshall({ a: 'x', n: 1, u: undefined, l: [undefined, true], m: { z: null } })).toEqual({
      a: { S: 'x' },
      n: { N: '1' },
      l: { L: [{ BOOL: true }] },
      m: { M: { z: { NULL: true } } },
    });
    expect(() => marshall({ n: 2 ** 53 })).toThrow(
      'Number 9007199254740992 is greater than Number.MAX_SAFE_INTEGER. Use NumberValue from @aws-sdk/lib-dynamodb.',
    );
    expect(() => marshall({ n: Number.NaN })).toThrow('Special numeric value NaN is not allowed');
    expect(() => marshall({ d: new Date(0) })).toThrow(/^Unsupported type passed: /);
    expect(() => marshall({ s: new Set() })).toThrow(
      'Pass a non-empty set, or options.convertEmptyValues=true.',
    );
    expect(marshall({ b: 12345678901234567890n })).toEqual({ b: { N: '12345678901234567890' } });
    expect(unmarshall({ n: { N: '9007199254740993' }, s: { NS: ['1'] } })).toEqual({
      n: 9007199254740993n,
      s: new Set([1]),
    });
    expect(() => unmarshall({ n: { N: '1e20' } })).toThrow(
      "1e20 can't be converted to BigInt. Set options.wrapNumbers to get string value.",
    );
    // Members are read once each, as util-dynamodb reads them (getters included).
    for (const convert of [sdkUnmarshall, unmarshall, (d: any) => sdkMarshall(d, SDK_OPTIONS), marshall]) {
      let reads = 0;
      const counted = Object.defineProperty({ b: { S: 'x' } }, 'a', {
        get: () => {
          reads++;
          return { S: 'y' };
        },
        enumerable: true,
      });
      convert(counted as any);
      expect(reads).toBe(1);
    }
    const b = new Uint8Array([1]);
    expect(marshall({ b }).b.B).toBe(b);
    expect(unmarshall({ b: { B: b } }).b).toBe(b);
  });

  it('on thousands of generated documents and wire maps (seeded)', () => {
    const tally = { marshall: { value: 0, error: 0 }, unmarshall: { value: 0, error: 0 } };
    for (let seed = 1; seed <= 2500; seed++) {
      const g = new Generator(seed);
      const hostile = seed % 3 === 0;
      const doc = seed % 50 === 0 ? g.value(2, true) : g.document(hostile);
      const m = checkMarshall(doc, `generated document #${seed}${hostile ? ' (hostile)' : ''}`);
      tally.marshall['value' in m ? 'value' : 'error']++;
      const wire = seed % 50 === 0 ? g.attribute(2, true) : g.wireMap(hostile);
      const u = checkUnmarshall(wire, `generated wire map #${seed}${hostile ? ' (hostile)' : ''}`);
      tally.unmarshall['value' in u ? 'value' : 'error']++;
    }
    // Both directions saw plenty of values and of errors (the generators are not one-sided).
    expect(tally.marshall.value).toBeGreaterThan(1500);
    expect(tally.marshall.error).toBeGreaterThan(200);
    expect(tally.unmarshall.value).toBeGreaterThan(1500);
    expect(tally.unmarshall.error).toBeGreaterThan(200);
  });
});

/** Random values from a seeded PRNG (mulberry32). */
class Generator {
  private state: number;
  constructor(seed: number) {
    this.state = seed * 0x9e3779b1;
  }
  private next(): number {
    this.state = (this.state + 0x6d2b79f5) | 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)];
  }
  chance(p: number): boolean {
    return this.next() < p;
  }

  key(hostile: boolean): string {
    if (hostile && this.chance(0.05)) return this.pick(['__proto__', 'constructor', 'toString', 'valueOf']);
    return this.pick([
      'a',
      'b',
      'pk',
      'sk',
      'name',
      '',
      '0',
      '7',
      '10',
      'ü',
      'a b',
      '#n',
      ':v',
      'kind',
      'x'.repeat(40),
    ]);
  }

  string(): string {
    return this.pick([
      '',
      'a',
      'hello world',
      'ünï',
      '日本語',
      '🎉',
      '\n\t',
      'ORG#1#CONN#2',
      'null',
      '0',
      'x'.repeat(300),
    ]);
  }

  number(hostile: boolean): number {
    if (hostile && this.chance(0.15))
      return this.pick([
        Number.NaN,
        Number.POSITIVE_INFINITY,
        Number.NEGATIVE_INFINITY,
        2 ** 53,
        -(2 ** 53),
        1e21,
        -1e300,
        2 ** 64,
      ]);
    switch (this.int(6)) {
      case 0:
        return this.int(1000);
      case 1:
        return -this.int(1_000_000);
      case 2:
        return (this.next() - 0.5) * 10 ** this.int(12);
      case 3:
        return this.pick([0, -0, 1e-7, 5e-324, Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER, 0.1, 1e15]);
      case 4:
        return Date.now() + this.int(1e6);
      default:
        return this.int(2 ** 31) * (this.chance(0.5) ? 1 : -1);
    }
  }

  bigint(): bigint {
    return this.pick([
      0n,
      1n,
      -1n,
      2n ** 53n + 1n,
      -(2n ** 70n),
      123456789012345678901234567890n,
      BigInt(this.int(1e9)),
    ]);
  }

  bytes(): unknown {
    const data = Uint8Array.from({ length: this.int(6) }, () => this.int(256));
    switch (this.int(5)) {
      case 0:
        return Buffer.from(data);
      case 1:
        return new Uint8Array(new Uint8Array([...data, 1, 2]).buffer, 1, data.length);
      default:
        return data;
    }
  }

  /** Anything marshall might meet; `hostile` adds what it refuses or treats oddly. */
  value(depth: number, hostile: boolean): unknown {
    const kinds = depth > 0 ? 14 : 8;
    if (hostile && this.chance(0.12)) return this.oddValue(depth);
    switch (this.int(kinds)) {
      case 0:
      case 1:
        return this.string();
      case 2:
        return this.number(hostile);
      case 3:
        return this.chance(0.5);
      case 4:
        return this.chance(0.7) ? null : undefined;
      case 5:
        return this.chance(0.5) ? this.bigint() : this.bytes();
      case 6:
        return this.chance(0.9) ? this.string() : () => 1;
      case 7:
        return this.set(hostile);
      case 8:
      case 9: {
        const n = this.int(5);
        const list: unknown[] = [];
        for (let i = 0; i < n; i++) list.push(this.value(depth - 1, hostile));
        if (hostile && this.chance(0.1)) list[n + 2] = 'after a hole';
        return list;
      }
      case 10:
        return this.chance(0.85)
          ? this.map(depth - 1, hostile)
          : new Map(Object.entries(this.map(depth - 1, hostile) as object));
      default:
        return this.map(depth - 1, hostile);
    }
  }

  oddValue(depth: number): unknown {
    return this.pick([
      () => new Date(this.int(1e12)),
      () => new Point(),
      () => Object.assign(Object.create(null), this.map(depth - 1, false)),
      () => new Number(this.number(true)),
      () => new String(this.string()),
      () => new Boolean(this.chance(0.5)),
      () => Symbol('s'),
      () => NumberValueImpl.from(String(this.bigint())),
      () => new ArrayBuffer(this.int(3)),
      () => new Float64Array(this.int(3)),
      () => ({ constructor: this.pick(['x', 0, 1, { name: 'Set' }, { name: 'Map' }, { name: 'Object' }]) }),
      () => new Set(),
      () => new Set([undefined]),
      () => /re/,
    ])();
  }

  set(hostile: boolean): Set<unknown> {
    const n = 1 + this.int(4);
    const kind = this.int(4);
    const members: unknown[] = [];
    for (let i = 0; i < n; i++)
      members.push(
        hostile && this.chance(0.2)
          ? this.pick([undefined, null, 'x', 1, 2n, true, Number.NaN, 2 ** 60, bytes, { a: 1 }])
          : kind === 0
            ? this.string()
            : kind === 1
              ? this.number(false)
              : kind === 2
                ? this.bigint()
                : this.bytes(),
      );
    return new Set(members);
  }

  map(depth: number, hostile: boolean): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    const n = this.int(6);
    for (let i = 0; i < n; i++) withOwn(out, this.key(hostile), this.value(depth, hostile));
    return out;
  }

  /** A document as the service stores it: keys, a kind, and members of every sort. */
  document(hostile: boolean): unknown {
    return { pk: `ORG#${this.int(100)}`, sk: `CONN#${this.int(100)}`, ...this.map(3, hostile) };
  }

  numberText(hostile: boolean): unknown {
    if (hostile && this.chance(0.3))
      return this.pick([
        '9007199254740993',
        '-9007199254740993',
        '123456789012345678901234567890',
        '1e20',
        '-1e20',
        '12345678901234567890.5',
        '1e400',
        '-1e400',
        'Infinity',
        'NaN',
        'abc',
        '',
        ' 12 ',
        '0x1f',
        5,
        1e20,
      ]);
    const n = this.number(false);
    return Object.is(n, -0) ? '-0' : String(n);
  }

  /** An attribute value; `hostile` adds malformed ones. */
  attribute(depth: number, hostile: boolean): unknown {
    if (hostile && this.chance(0.1))
      return this.pick([
        () => ({}),
        () => ({ X: 1 }),
        () => ({ S: undefined, N: this.numberText(false) }),
        () => ({ S: 'a', N: '1' }),
        () => ({ L: 'x' }),
        () => ({ M: null }),
        () => ({ NS: 1 }),
        () => null,
        () => 'S',
        () => ({ BOOL: 'false' }),
        () => ({ NULL: false }),
      ])();
    const kinds = depth > 0 ? 11 : 8;
    switch (this.int(kinds)) {
      case 0:
      case 1:
        return { S: this.string() };
      case 2:
        return { N: this.numberText(hostile) };
      case 3:
        return { BOOL: this.chance(0.5) };
      case 4:
        return { NULL: true };
      case 5:
        return { B: this.bytes() };
      case 6:
        return this.chance(0.5)
          ? { SS: Array.from({ length: 1 + this.int(3) }, () => this.string()) }
          : { BS: Array.from({ length: 1 + this.int(3) }, () => this.bytes()) };
      case 7:
        return { NS: Array.from({ length: 1 + this.int(3) }, () => this.numberText(hostile)) };
      case 8:
        return { L: Array.from({ length: this.int(4) }, () => this.attribute(depth - 1, hostile)) };
      default:
        return { M: this.wireMap(hostile, depth - 1) };
    }
  }

  wireMap(hostile: boolean, depth = 3): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    const n = this.int(6);
    for (let i = 0; i < n; i++) withOwn(out, this.key(hostile), this.attribute(depth, hostile));
    return out;
  }
}
