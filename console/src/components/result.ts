/** A query result as the API returns it, and its text forms (a cell, a CSV file). */
export interface Result {
  columns: string[];
  rows: Record<string, unknown>[];
  rowCount: number;
  executionTime?: number;
  truncated?: boolean;
}

export function cell(v: unknown): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

const NUMERIC = /^[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$/;
const FORMULA_START = /^[=+\-@\t\r]/;

/**
 * RFC 4180 CSV with the same rules as a workflow's CSV attachment (shared/workflows/actions/csv.ts; a unit
 * test holds the two to the same output): a text cell starting with `=`, `+`, `-`, `@`, tab or CR gets a
 * leading `'` so a spreadsheet shows it as text instead of evaluating it; numbers stay numbers.
 */
export function toCsv(r: Result): string {
  const text = (v: unknown) => {
    const s = cell(v);
    return typeof v === 'string' && FORMULA_START.test(s) && !NUMERIC.test(s) ? `'${s}` : s;
  };
  const field = (s: string) => (/[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s);
  return [
    r.columns.map((c) => field(text(c))),
    ...r.rows.map((row) => r.columns.map((c) => field(text(row[c])))),
  ]
    .map((l) => `${l.join(',')}\r\n`)
    .join('');
}

/** "1 row", "2 rows": a count with its noun. */
export const count = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;
