import { describe, expect, it } from 'vitest';
import {
  errorForModel,
  MODEL_ROWS,
  parseArguments,
  resultForModel,
  summarizeResult,
  TOOL_RESULT_CHARS,
  toolDefinitions,
} from '../../shared/chat/tools';
import { AppError } from '../../shared/platform/errors';

const result = (n: number, width = 10) => ({
  columns: ['id', 'text'],
  rows: Array.from({ length: n }, (_, i) => ({ id: i + 1, text: 'x'.repeat(width) })),
  rowCount: n,
  executionTime: 3,
});

describe('what the model is sent of a result', () => {
  it('is at most 20 rows, saying how many there are', () => {
    const out = JSON.parse(resultForModel(result(500)));
    expect(out).toMatchObject({ ok: true, rowCount: 500, rowsShown: MODEL_ROWS, columns: ['id', 'text'] });
    expect(out.rows).toHaveLength(20);
    expect(out.rows[19].id).toBe(20);
    expect(out.note).toMatch(/first 20 rows/);
  });

  it('clips long values and keeps the whole text under the tool-result bound', () => {
    const text = resultForModel(result(20, 50_000));
    expect(text.length).toBeLessThanOrEqual(TOOL_RESULT_CHARS);
    const out = JSON.parse(text);
    expect(out.rows.length).toBeGreaterThan(0);
    expect(out.rows[0].text.length).toBeLessThanOrEqual(200);
  });

  it('shows a small result whole', () => {
    const out = JSON.parse(resultForModel(result(2)));
    expect(out.rows).toEqual([
      { id: 1, text: 'xxxxxxxxxx' },
      { id: 2, text: 'xxxxxxxxxx' },
    ]);
    expect(out.note).toBeUndefined();
  });

  it('summarises a result for the conversation in at most 500 characters', () => {
    expect(summarizeResult(result(1))).toBe(
      '1 row; columns: id, text; first rows: {"id":1,"text":"xxxxxxxxxx"}',
    );
    expect(summarizeResult({ ...result(0), truncated: false })).toBe('0 rows; columns: id, text');
    expect(summarizeResult({ ...result(3, 1000), truncated: true }).length).toBeLessThanOrEqual(500);
    expect(summarizeResult({ ...result(3), truncated: true })).toMatch(/^3 rows \(capped\)/);
  });
});

describe('tool errors and arguments', () => {
  it('passes the database error and position back, with a hint to repair or to stop', () => {
    const e = new AppError(422, 'QUERY_FAILED', 'column "nme" does not exist', {
      code: '42703',
      position: 8,
    });
    expect(JSON.parse(errorForModel(e, true))).toEqual({
      ok: false,
      code: 'QUERY_FAILED',
      error: 'column "nme" does not exist',
      databaseCode: '42703',
      position: 8,
      hint: 'Fix the query and call run_query again.',
    });
    expect(JSON.parse(errorForModel(e, false)).hint).toMatch(/Do not retry/);
    const ro = new AppError(400, 'READ_ONLY_VIOLATION', 'DELETE is not allowed');
    expect(JSON.parse(errorForModel(ro, true)).hint).toMatch(/never changes data/);
  });

  it('parses tool arguments, reporting malformed JSON', () => {
    expect(parseArguments('{"sql":"SELECT 1"}')).toEqual({ ok: true, value: { sql: 'SELECT 1' } });
    expect(parseArguments('')).toEqual({ ok: true, value: {} });
    expect(parseArguments('{"sql":')).toMatchObject({
      ok: false,
      error: expect.stringMatching(/not valid JSON/),
    });
    expect(parseArguments('[1]')).toMatchObject({ ok: false });
  });

  it('offers run_query only while queries are allowed, and describes MongoDB queries as JSON', () => {
    expect(toolDefinitions('POSTGRES', true).map((t: any) => t.function.name)).toEqual([
      'run_query',
      'search_schema',
      'describe_tables',
    ]);
    expect(toolDefinitions('POSTGRES', false).map((t: any) => t.function.name)).toEqual([
      'search_schema',
      'describe_tables',
    ]);
    expect((toolDefinitions('MONGODB', true)[0] as any).function.description).toContain(
      '{"collection": "...", "pipeline"',
    );
  });
});
