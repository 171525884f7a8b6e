import { describe, expect, it } from 'vitest';
import { toCsv as consoleCsv } from '../../console/src/components/result';
import { toCsv as workflowCsv } from '../../shared/workflows/actions/csv';

/**
 * The console's "Download CSV" and a workflow's CSV attachment follow the same rules (RFC 4180 and
 * formula defusing), over the JSON values the API returns. Hostile cells and column names from a
 * database must reach a spreadsheet as text, never as a formula.
 */
describe('console CSV download', () => {
  const columns = ['=HYPERLINK("http://x","click")', 'name', 'n', 'b,c', 'obj'];
  const rows: Record<string, unknown>[] = [
    { [columns[0]]: '=1+2', name: '+cmd|calc', n: -12.5, 'b,c': 'has "quote", comma', obj: { x: 1 } },
    { [columns[0]]: '@SUM(A1)', name: '-2+3', n: '-12.5', 'b,c': 'line\r\nbreak', obj: [1, 2] },
    { [columns[0]]: '\tTAB', name: '\rCR', n: null, 'b,c': true, obj: 'plain' },
    { [columns[0]]: "'already", name: ' =space first', n: '1e5', 'b,c': '', obj: '=cmd' },
  ];

  it('defuses formulas in cells and column names, keeps numbers, quotes per RFC 4180', () => {
    const csv = consoleCsv({ columns, rows, rowCount: rows.length });
    const lines = csv.split('\r\n');
    expect(lines[0]).toBe(`"'=HYPERLINK(""http://x"",""click"")",name,n,"b,c",obj`);
    expect(lines[1]).toBe(`'=1+2,'+cmd|calc,-12.5,"has ""quote"", comma","{""x"":1}"`);
    expect(csv).toContain(`'@SUM(A1),'-2+3,-12.5,"line\r\nbreak","[1,2]"\r\n`);
    expect(csv).toContain(`'\tTAB,"'\rCR",,true,plain\r\n`);
    expect(csv).toContain(`'already, =space first,1e5,,'=cmd\r\n`);
    expect(csv.endsWith('\r\n')).toBe(true);
  });

  it('gives the same bytes as a workflow CSV attachment for the same result', () => {
    expect(consoleCsv({ columns, rows, rowCount: rows.length })).toBe(workflowCsv(columns, rows));
  });
});
