import { BSON } from 'mongodb';
import { describe, expect, it } from 'vitest';
import { normalizeValue, RowCollector, rowOf, uniqueColumns } from '../../shared/databases/values';

describe('normalizeValue keeps the meaning of values in JSON', () => {
  it('big integers become strings; SQLite-style safe bigints may stay numbers', () => {
    expect(normalizeValue(9007199254740993n)).toBe('9007199254740993');
    expect(normalizeValue(42n)).toBe('42');
    expect(normalizeValue(42n, { safeBigInts: true })).toBe(42);
    expect(normalizeValue(9007199254740993n, { safeBigInts: true })).toBe('9007199254740993');
    expect(normalizeValue(-9007199254740993n, { safeBigInts: true })).toBe('-9007199254740993');
  });

  it('dates become ISO strings; invalid dates become null', () => {
    expect(normalizeValue(new Date('2024-03-01T10:20:30.123Z'))).toBe('2024-03-01T10:20:30.123Z');
    expect(normalizeValue(new Date('nope'))).toBeNull();
  });

  it('binary becomes base64', () => {
    expect(normalizeValue(Buffer.from([1, 2, 255]))).toBe('AQL/');
    expect(normalizeValue(new Uint8Array([1, 2, 255]))).toBe('AQL/');
    expect(normalizeValue(new Uint8Array([0, 1, 2, 255]).subarray(1))).toBe('AQL/');
  });

  it('NaN and infinities (not JSON) become strings', () => {
    expect(normalizeValue(Number.NaN)).toBe('NaN');
    expect(normalizeValue(Number.POSITIVE_INFINITY)).toBe('Infinity');
    expect(normalizeValue(Number.NEGATIVE_INFINITY)).toBe('-Infinity');
  });

  it('JSON columns stay objects, normalized recursively', () => {
    expect(normalizeValue({ a: [1, { b: 2n, d: new Date(0) }], c: null, u: undefined })).toEqual({
      a: [1, { b: '2', d: '1970-01-01T00:00:00.000Z' }],
      c: null,
      u: null,
    });
  });

  it('BSON ObjectId, Decimal128, Long, Int32, Double, Timestamp, Binary and UUID become JSON values', () => {
    expect(normalizeValue(new BSON.ObjectId('65f000000000000000000001'))).toBe('65f000000000000000000001');
    expect(normalizeValue(BSON.Decimal128.fromString('12345678901234567890.125'))).toBe(
      '12345678901234567890.125',
    );
    expect(normalizeValue(BSON.Long.fromString('9007199254740993'))).toBe('9007199254740993');
    expect(normalizeValue(new BSON.Int32(5))).toBe(5);
    expect(normalizeValue(new BSON.Double(1.5))).toBe(1.5);
    expect(normalizeValue(new BSON.Binary(Buffer.from([1, 2, 255])))).toBe('AQL/');
    const uuid = new BSON.UUID('0f8fad5b-d9cb-469f-a165-70867728950e');
    expect(normalizeValue(uuid)).toBe('0f8fad5b-d9cb-469f-a165-70867728950e');
    expect(typeof normalizeValue(new BSON.Timestamp({ t: 1, i: 2 }))).toBe('string');
  });

  it('value objects with toISOString (pg intervals) use it; Maps and Sets become objects and arrays', () => {
    expect(normalizeValue({ toISOString: () => 'P1D' })).toBe('P1D');
    expect(normalizeValue(new Map([['a', 1n]]))).toEqual({ a: '1' });
    expect(normalizeValue(new Set([1, 2]))).toEqual([1, 2]);
  });
});

describe('uniqueColumns', () => {
  it('keeps every column of a result whose names repeat', () => {
    expect(uniqueColumns(['id', 'id', 'name', 'id'])).toEqual(['id', 'id_2', 'name', 'id_3']);
    expect(uniqueColumns(['a', 'a', 'a_2'])).toEqual(['a', 'a_3', 'a_2']);
    expect(uniqueColumns(['', 'x'])).toEqual(['column_1', 'x']);
  });

  it('rowOf builds normalized rows by position', () => {
    expect(rowOf(['a', 'b'], [1n, Buffer.from('hi')])).toEqual({ a: '1', b: 'aGk=' });
  });
});

describe('RowCollector', () => {
  it('stops at maxRows and marks truncated only when another row arrives', () => {
    const c = new RowCollector(2, 1e6);
    expect(c.add({ a: 1 })).toBe(true);
    expect(c.add({ a: 2 })).toBe(true);
    expect(c.truncated).toBe(false);
    expect(c.add({ a: 3 })).toBe(false);
    expect(c.truncated).toBe(true);
    expect(c.rows).toEqual([{ a: 1 }, { a: 2 }]);
  });

  it('stops before the JSON of the rows exceeds maxBytes', () => {
    const c = new RowCollector(100, 50);
    expect(c.add({ s: 'x'.repeat(20) })).toBe(true);
    expect(c.add({ s: 'x'.repeat(20) })).toBe(false);
    expect(c.truncated).toBe(true);
    expect(c.rows).toHaveLength(1);
    expect(Buffer.byteLength(JSON.stringify(c.rows))).toBeLessThanOrEqual(50);
  });

  it('counts bytes, not characters', () => {
    const c = new RowCollector(100, 40);
    expect(c.add({ s: 'é'.repeat(10) })).toBe(true);
    expect(c.add({ s: 'é'.repeat(10) })).toBe(false);
  });
});
