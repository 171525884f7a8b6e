/**
 * The short text a tool result carries beside its structured content, for clients that read only
 * text: Markdown tables of at most TEXT_ROWS rows, the row count and a note when rows were left out.
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

/** A Markdown table of the first TEXT_ROWS rows. */
export function markdownTable(columns: string[], rows: Record<string, unknown>[]): string {
  if (!columns.length) return '(no columns)';
  const lines = [
    `| ${columns.map(cell).join(' | ')} |`,
    `|${columns.map(() => ' --- ').join('|')}|`,
    ...rows.slice(0, TEXT_ROWS).map((r) => `| ${columns.map((c) => cell(r[c])).join(' | ')} |`),
  ];
  return lines.join('\n');
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
  noun: string,
  items: Record<string, unknown>[],
  columns: string[],
  total: number,
  truncated: boolean,
): string {
  if (!items.length) return `No ${noun}.`;
  const notes = [`${total} ${noun} in all.`];
  if (items.length > TEXT_ROWS) notes.push(`Showing the first ${TEXT_ROWS}.`);
  if (truncated) notes.push(`Only the first ${items.length} are listed.`);
  return `${markdownTable(columns, items)}\n\n${notes.join(' ')}`;
}

/** One record as `field: value` lines. */
export function recordText(title: string, record: Record<string, unknown>, fields: string[]): string {
  return [
    title,
    ...fields.filter((f) => record[f] !== undefined).map((f) => `- ${f}: ${cell(record[f])}`),
  ].join('\n');
}
