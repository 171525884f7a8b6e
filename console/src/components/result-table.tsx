import { cell, type Result, toCsv } from './result';

function download(r: Result, name: string) {
  const url = URL.createObjectURL(new Blob([toCsv(r)], { type: 'text/csv;charset=utf-8' }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

/** A query result as a table: column headers, rows as text, row count, time, the truncation notice and CSV download. */
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
      {/* Focusable: a table wider than its box scrolls inside it, and the keyboard can scroll it too. */}
      {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling region must take the focus (axe scrollable-region-focusable) */}
      <div class="table-wrap" tabIndex={0}>
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
