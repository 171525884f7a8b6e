import { describe, expect, it, vi } from 'vitest';
import { RowCollector, rowOf } from '../../shared/databases/values';

/** The byte cap as first written: every row serialized, a row taken when the exact JSON still fits. */
class ReferenceCollector {
  readonly rows: Record<string, unknown>[] = [];
  truncated = false;
  private bytes = 2;
  constructor(
    private readonly maxRows: number,
    private readonly maxBytes: number,
  ) {}
  add(row: Record<string, unknown>): boolean {
    if (this.truncated) return false;
    if (this.rows.length >= this.maxRows) {
      this.truncated = true;
      return false;
    }
    const size = Buffer.byteLength(JSON.stringify(row)) + 1;
    if (this.bytes + size > this.maxBytes) {
      this.truncated = true;
      return false;
    }
    this.bytes += size;
    this.rows.push(row);
    return true;
  }
}

/** Deterministic pseudo-random numbers (mulberry32), so a failure reproduces. */
function random(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const PIECES = ['a', 'é', '€', '😀', '"', '\\', '\n', '\u0001', '\ud800', '\udfff', ' ', 'Z', '\u2028'];

function value(rnd: () => number): unknown {
  const r = rnd();
  if (r < 0.35) {
    const len = Math.floor(rnd() ** 3 * 400);
    let s = '';
    for (let i = 0; i < len; i++) s += PIECES[Math.floor(rnd() * PIECES.length)];
    return s;
  }
  if (r < 0.5) return (rnd() - 0.5) * 10 ** Math.floor(rnd() * 40 - 20);
  if (r < 0.6) return Math.floor(rnd() * 1e6);
  if (r < 0.65) return -0.0000012345678901234567;
  if (r < 0.72) return rnd() < 0.5;
  if (r < 0.8) return null;
  if (r < 0.9) return { nested: [1, 'x"y', { z: null }], n: rnd() };
  return [rnd(), 'é', null];
}

/** The longest number forms JSON has, with short keys: the bound for numbers is tight here. */
function longNumber(rnd: () => number): unknown {
  const forms = [
    -0.0000012345678901234567,
    -1.2345678901234567e-308,
    -123456789012345680000,
    -Number.MAX_VALUE,
  ];
  return rnd() < 0.9 ? forms[Math.floor(rnd() * forms.length)] : true;
}

function rows(seed: number, count: number) {
  const rnd = random(seed);
  const numeric = seed % 3 === 0;
  const columns = numeric ? ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'] : ['id', 'name', 'ké"y', '', 'v'];
  return Array.from({ length: count }, () =>
    rowOf(
      columns,
      columns.map(() => (numeric ? longNumber(rnd) : value(rnd))),
    ),
  );
}

describe('RowCollector takes exactly the rows that fit, without serializing every row', () => {
  it('agrees with a collector that serializes every row, for random rows and caps', () => {
    for (let seed = 1; seed <= 60; seed++) {
      const input = rows(seed, 300);
      const total = Buffer.byteLength(JSON.stringify(input));
      const rnd = random(seed * 7919);
      for (const maxBytes of [50, Math.floor(total * rnd()), total - 1, total, total + 5, 10 * total]) {
        const maxRows = rnd() < 0.3 ? Math.floor(rnd() * 300) + 1 : 10_000;
        const fast = new RowCollector(maxRows, maxBytes);
        const ref = new ReferenceCollector(maxRows, maxBytes);
        for (const row of input) {
          const a = fast.add(row);
          expect(a).toBe(ref.add(row));
          if (!a) break;
        }
        expect(fast.rows.length).toBe(ref.rows.length);
        expect(fast.truncated).toBe(ref.truncated);
        expect(Buffer.byteLength(JSON.stringify(fast.rows))).toBeLessThanOrEqual(Math.max(2, maxBytes));
      }
    }
  });

  it('stops at the exact byte (rows are counted with a separator each: n bytes of JSON need a cap of n + 1)', () => {
    const input = rows(99, 200).map((r) => ({ s: String(r.name ?? ''), n: 1.5 }));
    const total = Buffer.byteLength(JSON.stringify(input));
    const exact = new RowCollector(10_000, total + 1);
    for (const row of input) expect(exact.add(row)).toBe(true);
    expect(exact.truncated).toBe(false);
    const short = new RowCollector(10_000, total);
    let taken = 0;
    for (const row of input) if (short.add(row)) taken++;
    expect(taken).toBe(input.length - 1);
    expect(short.truncated).toBe(true);
  });

  it('a row that cannot fit whatever its exact size is refused without serializing it (no copy of a huge value)', () => {
    const c = new RowCollector(1000, 5 * 1024 * 1024);
    expect(c.add({ s: 'small' })).toBe(true);
    const stringify = vi.spyOn(JSON, 'stringify');
    try {
      expect(c.add({ s: 'x'.repeat(8_000_000), n: 1 })).toBe(false);
      expect(stringify).not.toHaveBeenCalled();
    } finally {
      stringify.mockRestore();
    }
    expect(c.truncated).toBe(true);
    expect(c.rows).toEqual([{ s: 'small' }]);
  });

  it('a value JSON cannot hold fails as before (bigint reaching the collector throws)', () => {
    const c = new RowCollector(10, 1e6);
    expect(() => c.add({ a: 1n })).toThrow(TypeError);
  });
});

describe('rowOf', () => {
  it('keeps strings and booleans as they are and normalizes every other value', () => {
    expect(
      rowOf(['s', 'b', 'n', 'x', 'u', 'd'], ['é', false, Number.NaN, 5n, undefined, new Date(0)]),
    ).toEqual({
      s: 'é',
      b: false,
      n: 'NaN',
      x: '5',
      u: null,
      d: '1970-01-01T00:00:00.000Z',
    });
  });
});
