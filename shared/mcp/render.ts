/**
 * The short text a tool result carries beside its structured content, for clients that read only
 * text: Markdown tables of at most TEXT_ROWS rows, the row count and a note when rows were left out.
 * Lists name nested values in words (a column formatter), never as JSON; only a query result's own cells
 * show a JSON value of the database as JSON (that is the data).
 */
export const TEXT_ROWS = 50;
const CELL_CHARS = 200;

function cell(v: unknown): string {
  let s: string;
  if (v === null || v === undefined) s = v === null ? 'NULL' : '';
  else if (typeof v === 'object') s = JSON.stringify(v);
  else s = String(v);
  if (s.length > CELL_CHARS) s = `${s.slice(0, CELL_CHARS - 1)}…`;
  return s
    .replace(/\\/g, '\\\\')
    .replace(/\|/g, '\\|')
    .replace(/\r?\n|\r/g, ' ');
}

/** Formats one column's value as words (the cell is then escaped and cut as any other). */
export type ColumnFormat = (value: any) => string;

/** A Markdown table of the first TEXT_ROWS rows. */
export function markdownTable(
  columns: string[],
  rows: Record<string, unknown>[],
  formats: Record<string, ColumnFormat> = {},
  opts: { emptyNull?: boolean } = {},
): string {
  if (!columns.length) return '(no columns)';
  const value = (r: Record<string, unknown>, c: string) =>
    formats[c] && r[c] !== null && r[c] !== undefined ? formats[c](r[c]) : r[c];
  const text = (r: Record<string, unknown>, c: string) => {
    const v = value(r, c);
    // In a list a missing field is an empty cell; NULL is a query result's own value.
    return opts.emptyNull && v === null ? '' : cell(v);
  };
  const lines = [
    `| ${columns.map(cell).join(' | ')} |`,
    `|${columns.map(() => ' --- ').join('|')}|`,
    ...rows.slice(0, TEXT_ROWS).map((r) => `| ${columns.map((c) => text(r, c)).join(' | ')} |`),
  ];
  return lines.join('\n');
}

/** `1 connection`, `2 connections`, `0 saved queries`. */
export const count = (n: number, noun: Noun) => `${n} ${n === 1 ? noun.one : noun.many}`;

/** A noun's singular and plural, as lists and counts say it. */
export interface Noun {
  one: string;
  many: string;
}

interface ResultLike {
  columns: string[];
  rows: Record<string, unknown>[];
  rowCount: number;
  truncated?: boolean;
}

/** A query result: the table, how many rows it has, and what was left out (here and by the row cap). */
export function resultText(r: ResultLike, extra: string[] = []): string {
  const notes = [`${r.rowCount} row${r.rowCount === 1 ? '' : 's'}.`, ...extra];
  if (r.rows.length > TEXT_ROWS)
    notes.push(`Showing the first ${TEXT_ROWS}; every row is in the structured content.`);
  if (r.truncated)
    notes.push(
      'Truncated: the result reached the row cap (maxRows) or 5 MiB of JSON; more rows exist in the database.',
    );
  return `${markdownTable(r.columns, r.rows)}\n\n${notes.join(' ')}`;
}

/** A list of records: the chosen fields as a table, with the total and a note when it is partial. */
export function listText(
  noun: Noun,
  items: Record<string, unknown>[],
  columns: string[],
  total: number,
  truncated: boolean,
  formats: Record<string, ColumnFormat> = {},
  /** How many records the rows show (when a record takes several rows). */
  listed = items.length,
): string {
  if (!items.length) return `No ${noun.many}.`;
  const notes = [`${count(total, noun)} in all.`];
  if (items.length > TEXT_ROWS) notes.push(`Showing the first ${TEXT_ROWS} rows.`);
  if (truncated) notes.push(`Only the first ${listed} are listed.`);
  return `${markdownTable(columns, items, formats, { emptyNull: true })}\n\n${notes.join(' ')}`;
}

/** A list of short texts as one cell: `a, b, c`, or `none`. */
export const words = (xs: unknown[], sep = ', ') => (xs.length ? xs.map(String).join(sep) : 'none');

/** One record as `field: value` lines. */
export function recordText(title: string, record: Record<string, unknown>, fields: string[]): string {
  return [
    title,
    ...fields.filter((f) => record[f] !== undefined).map((f) => `- ${f}: ${cell(record[f])}`),
  ].join('\n');
}
