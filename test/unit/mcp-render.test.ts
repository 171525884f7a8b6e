import { describe, expect, it } from 'vitest';
import { portable } from '../../shared/mcp/portable';
import { listText, markdownTable, resultText, TEXT_ROWS } from '../../shared/mcp/render';

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

  it('lists count in the singular and the plural, and format nested values in words', () => {
    const noun = { one: 'saved query', many: 'saved queries' };
    const items = [{ id: 'q1', parameters: [{ name: 'min', type: 'number' }], tags: ['a', 'b'] }];
    const formats = {
      parameters: (ps: any[]) => ps.map((p) => `${p.name} (${p.type})`).join(', '),
      tags: (t: string[]) => t.join(', '),
    };
    expect(listText(noun, items, ['id', 'parameters', 'tags'], 1, false, formats)).toBe(
      '| id | parameters | tags |\n| --- | --- | --- |\n| q1 | min (number) | a, b |\n\n1 saved query in all.',
    );
    expect(listText(noun, [...items, ...items], ['id'], 2, false)).toMatch(/2 saved queries in all\.$/);
    expect(listText(noun, [], ['id'], 0, false)).toBe('No saved queries.');
  });
});

describe('portable JSON Schema (what the MCP Inspector --strict check asks)', () => {
  it('splits nullable type arrays into one-type anyOf branches, keeping constraints and annotations', () => {
    expect(portable({ type: ['string', 'null'], format: 'date-time', description: 'when' })).toEqual({
      description: 'when',
      anyOf: [{ type: 'string', format: 'date-time' }, { type: 'null' }],
    });
    expect(portable({ type: ['string', 'null'], enum: ['a', 'b', null] })).toEqual({
      anyOf: [{ type: 'string', enum: ['a', 'b'] }, { type: 'null' }],
    });
    expect(portable({ type: ['integer'] })).toEqual({ type: 'integer' });
  });

  it('says what an unconstrained schema accepts: any JSON value, or a free-form object', () => {
    const out = portable({
      type: 'object',
      properties: {
        value: { description: 'anything' },
        rows: { type: 'array', items: { type: 'object', additionalProperties: {} } },
      },
      additionalProperties: false,
    }) as any;
    expect(out.properties.value.description).toBe('anything');
    expect(out.properties.value.anyOf.map((b: any) => b.type)).toEqual([
      'string',
      'number',
      'boolean',
      'null',
      'object',
      'array',
    ]);
    expect(out.properties.rows.items.additionalProperties).toBe(true);
    expect(out.additionalProperties).toBe(false);
    expect(portable({ not: {} })).toEqual({ not: {} });
  });
});
