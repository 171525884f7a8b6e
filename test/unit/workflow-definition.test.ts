import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../shared/workflows/definition';
import { hasRowLimit } from '../../shared/workflows/publish-checks';
import { boundedStepResults, STEP_RESULTS_MAX_BYTES } from '../../shared/workflows/runner';

describe('workflow definitions and run results', () => {
  it('canonical JSON ignores key order (hasUnpublishedChanges survives a store round trip)', () => {
    expect(canonicalJson({ b: 1, a: [{ y: 2, x: null }], c: undefined })).toBe(
      '{"a":[{"x":null,"y":2}],"b":1}',
    );
    expect(canonicalJson({ a: 1, b: { d: 1, c: 2 } })).toBe(canonicalJson({ b: { c: 2, d: 1 }, a: 1 }));
  });

  it('recognises a row limit for the publish warning', () => {
    for (const q of [
      'SELECT * FROM t LIMIT 10',
      'select * from t limit $1',
      'SELECT TOP 5 * FROM t',
      'SELECT TOP (5) * FROM t',
      'SELECT * FROM t ORDER BY id OFFSET 0 ROWS FETCH NEXT 10 ROWS ONLY',
      '{"collection": "c", "filter": {}, "limit": 10}',
      '{"collection": "c", "pipeline": [{"$limit": 5}]}',
    ])
      expect(hasRowLimit(q), q).toBe(true);
    for (const q of [
      'SELECT * FROM t',
      'SELECT * FROM t -- LIMIT 10',
      'SELECT * FROM t /* LIMIT 10 */',
      'SELECT limit_value FROM t',
      '{"collection": "c", "filter": {"limit": "x"}}',
    ])
      expect(hasRowLimit(q), q).toBe(false);
  });

  it('bounds stored step results to 64 KiB, keeping every step and as many first rows as fit', () => {
    const step = (i: number) => ({
      stepId: `s${i}`,
      name: `query_${i}`,
      order: i,
      connectionId: 'c',
      status: 'SUCCESS' as const,
      rowCount: 1000,
      columns: ['id', 'pad'],
      truncated: false,
      executionTimeMs: 1,
      conditionMet: true,
      error: null,
      errorCode: null,
    });
    const rows = Array.from({ length: 1000 }, (_, id) => ({ id, pad: 'x'.repeat(200) }));
    const results = [1, 2, 3, 4, 5].map(step);
    const text = boundedStepResults(
      results,
      results.map((r) => ({ name: r.name, columns: r.columns, rows, rowCount: 1000 })),
    );
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(STEP_RESULTS_MAX_BYTES);
    const parsed = JSON.parse(text);
    expect(parsed).toHaveLength(5);
    for (const p of parsed) {
      expect(p.rowCount).toBe(1000);
      expect(p.rowsStored).toBe(p.rows.length);
      expect(p.rowsStored).toBeGreaterThan(10);
      expect(p.rows[0]).toEqual(rows[0]);
    }
    // One enormous value: no rows fit, the facts stay.
    const huge = boundedStepResults(
      [step(1)],
      [{ name: 'q', columns: ['v'], rows: [{ v: 'y'.repeat(200_000) }], rowCount: 1 }],
    );
    expect(JSON.parse(huge)[0]).toMatchObject({ rowsStored: 0, rows: [], rowCount: 1000 });
  });
});
