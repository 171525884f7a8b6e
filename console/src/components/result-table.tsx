/** A query result: column headers, rows as text, row count, time, the truncation notice and CSV download. */
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

export function toCsv(r: Result): string {
  const q = (s: string) => (/[",\r\n]/.test(s) || /^[=+\-@]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s);
  return [r.columns.map(q).join(','), ...r.rows.map((row) => r.columns.map((c) => q(cell(row[c]))).join(','))]
    .join('\r\n')
    .concat('\r\n');
}

function download(r: Result, name: string) {
  const url = URL.createObjectURL(new Blob([toCsv(r)], { type: 'text/csv;charset=utf-8' }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

export function ResultTable({
  result,
  caption,
  csvName,
  summary = true,
}: {
  result: Result;
  caption?: string;
  csvName?: string;
  summary?: boolean;
}) {
  return (
    <div class="result">
      {summary && (
        <p class="result-meta" aria-live="polite">
          <span>
            {result.rowCount} {result.rowCount === 1 ? 'row' : 'rows'}
          </span>
          {result.executionTime !== undefined && <span> in {result.executionTime} ms</span>}
          {result.truncated && (
            <strong class="truncated">
              {' '}
              · Truncated: only the first {result.rows.length} rows are shown.
            </strong>
          )}
          {csvName && (
            <button type="button" class="link" onClick={() => download(result, csvName)}>
              Download CSV
            </button>
          )}
        </p>
      )}
      <div class="table-wrap">
        <table>
          {caption && <caption>{caption}</caption>}
          <thead>
            <tr>
              {result.columns.map((c) => (
                <th scope="col" key={c}>
                  {c}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {result.rows.map((row, i) => (
              <tr key={i}>
                {result.columns.map((c) => (
                  <td key={c}>{cell(row[c])}</td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </div>
  );
}
