import { describe, expect, it } from 'vitest';
import { markdownTable, resultText, TEXT_ROWS } from '../../shared/mcp/render';

describe('MCP text rendering', () => {
  it('keeps one table row per result row whatever the values hold (pipes, newlines, backslashes, objects)', () => {
    const rows = [
      { a: 'x | y', b: 'line1\nline2\r\nline3' },
      { a: 'ends with \\', b: { nested: '|' } },
      { a: null, b: undefined },
    ];
    const lines = markdownTable(['a', 'b'], rows).split('\n');
    expect(lines).toHaveLength(2 + rows.length);
    expect(lines[2]).toBe('| x \\| y | line1 line2 line3 |');
    expect(lines[3]).toBe('| ends with \\\\ | {"nested":"\\|"} |');
    expect(lines[4]).toBe('| NULL |  |');
    // Each row splits into exactly its cells on unescaped pipes.
    for (const l of lines) expect(l.split(/(?<!\\)\|/).length).toBe(4);
  });

  it('clips long cells and shows at most TEXT_ROWS rows, with the count and what was left out', () => {
    const rows = Array.from({ length: 120 }, (_, i) => ({ n: i, s: 'z'.repeat(500) }));
    const text = resultText({ columns: ['n', 's'], rows, rowCount: 120, truncated: true });
    const tableRows = text.split('\n').filter((l) => /^\| \d+ \|/.test(l));
    expect(tableRows).toHaveLength(TEXT_ROWS);
    expect(tableRows[0].length).toBeLessThan(220);
    expect(text).toContain('120 rows.');
    expect(text).toContain(`Showing the first ${TEXT_ROWS}`);
    expect(text).toContain('Truncated');
    expect(resultText({ columns: ['n'], rows: [{ n: 1 }], rowCount: 1 })).toBe(
      '| n |\n| --- |\n| 1 |\n\n1 row.',
    );
  });
});
