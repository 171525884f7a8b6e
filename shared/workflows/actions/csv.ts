import { toJson } from './template';

/**
 * RFC 4180 CSV: comma-separated, CRLF line ends (also after the last record), a header record with
 * the column names, and a field quoted (with inner quotes doubled) when it contains a comma, a
 * quote, CR or LF.
 *
 * Formula injection: a text cell (or column name) that starts with `=`, `+`, `-`, `@`, a tab or CR is prefixed with
 * a single quote `'`, so spreadsheets show it as text instead of evaluating it (OWASP's advice).
 * Numbers (JSON numbers, and numeric text such as `-12.5` that drivers return for NUMERIC/BIGINT)
 * are left as they are: they cannot be formulas and must stay numbers.
 */
export function toCsv(columns: string[], rows: Record<string, unknown>[]): string {
  const lines = [columns.map((c) => field(cell(c))).join(',')];
  for (const row of rows) lines.push(columns.map((c) => field(cell(row[c]))).join(','));
  return lines.map((l) => `${l}\r\n`).join('');
}

const NUMERIC = /^[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$/;
const FORMULA_START = /^[=+\-@\t\r]/;

export function cell(v: unknown): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean') return String(v);
  if (v instanceof Date) return v.toISOString();
  const text = typeof v === 'string' ? v : toJson(v);
  return FORMULA_START.test(text) && !NUMERIC.test(text) ? `'${text}` : text;
}

function field(text: string): string {
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}
