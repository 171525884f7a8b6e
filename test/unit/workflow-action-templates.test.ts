import { describe, expect, it } from 'vitest';
import { toCsv } from '../../shared/workflows/actions/csv';
import { buildEmail, renderBodyHtml, renderSubject } from '../../shared/workflows/actions/email';
import {
  highestStep,
  renderForm,
  renderJson,
  renderText,
  type TemplateContext,
  TemplateStepMissing,
  templateProblems,
} from '../../shared/workflows/actions/template';

const HOSTILE = [
  'quote " here',
  "single ' quote",
  'back\\slash',
  'new\nline\r\ncrlf',
  'tab\there',
  '</script><script>alert(1)</script>',
  'unicode é 日本 😀 \u2028 \u2029',
  '{{run.id}}',
  '\u0000nul',
  '\ud800 lone surrogate',
  '=HYPERLINK("http://x")',
];

function ctx(values: unknown[] = HOSTILE): TemplateContext {
  return {
    workflow: { id: 'w1', name: 'Daily "sales" </script> \\ \n report' },
    run: { id: 'run-1', scheduledFor: null },
    steps: [
      {
        name: 'q1',
        columns: ['v', 'n'],
        rows: values.map((v, i) => ({ v, n: i })),
        rowCount: values.length,
      },
      { name: 'empty', columns: ['x'], rows: [], rowCount: 0 },
    ],
  };
}

describe('template placeholders', () => {
  it('knows the placeholders and refuses the others', () => {
    expect(
      templateProblems('{{query_1.row_count}} {{ query_5.rows }} {{query_2.columns}}', { allowTable: false }),
    ).toEqual([]);
    expect(
      templateProblems('{{workflow.name}}{{run.id}}{{run.scheduledFor}}', { allowTable: false }),
    ).toEqual([]);
    expect(templateProblems('{{query_1.table}}', { allowTable: true })).toEqual([]);
    expect(templateProblems('{{query_1.table}}', { allowTable: false })[0]).toMatch(
      /only available in an email body/,
    );
    for (const bad of [
      '{{query_6.rows}}',
      '{{query_0.rows}}',
      '{{query_1.secret}}',
      '{{env.HOME}}',
      '{{}}',
      '{{ workflow.id }}',
    ])
      expect(templateProblems(`x ${bad} y`, { allowTable: true })[0], bad).toMatch(/unknown placeholder/);
    // Single braces and text are not placeholders.
    expect(templateProblems('{"a": {"b": 1}} { {run.id} }', { allowTable: false })).toEqual([]);
    expect(highestStep('{{query_3.rows}} {{query_1.row_count}}')).toBe(3);
  });

  it('a missing step is an error at render time, not a silent empty value', () => {
    expect(() => renderText('{{query_3.row_count}}', ctx())).toThrow(TemplateStepMissing);
  });
});

describe('JSON mode', () => {
  it('a bare rows placeholder is the native array and strings are escaped as string content', () => {
    const t =
      '{"name": "{{workflow.name}}", "count": {{query_1.row_count}}, "rows": {{query_1.rows}}, "cols": {{query_1.columns}}, "at": {{run.scheduledFor}}, "note": "rows: {{query_1.rows}} at {{run.scheduledFor}}", "id": {{run.id}}}';
    const out = renderJson(t, ctx());
    const parsed = JSON.parse(out);
    expect(parsed.name).toBe(ctx().workflow.name);
    expect(parsed.count).toBe(HOSTILE.length);
    // Every hostile value round-trips exactly (lone surrogates are escaped, not broken).
    expect(parsed.rows.map((r: { v: string }) => r.v)).toEqual(HOSTILE);
    expect(parsed.cols).toEqual(['v', 'n']);
    expect(parsed.at).toBeNull();
    expect(parsed.id).toBe('run-1');
    expect(JSON.parse(parsed.note.slice('rows: '.length, parsed.note.indexOf(' at '))).length).toBe(
      HOSTILE.length,
    );
    expect(parsed.note.endsWith(' at ')).toBe(true);
    // A value that looks like a placeholder is not expanded again.
    expect(out).not.toContain('"v":"run-1"');
  });

  it('tracks string literals with escaped quotes and backslashes', () => {
    const t = '{"a": "x\\" {{run.id}} \\\\", "b": {{run.id}}, "c": "\\\\{{workflow.name}}"}';
    const parsed = JSON.parse(renderJson(t, ctx()));
    expect(parsed.a).toBe('x" run-1 \\');
    expect(parsed.b).toBe('run-1');
    expect(parsed.c).toBe(`\\${ctx().workflow.name}`);
  });

  it('an empty result is an empty array', () => {
    expect(JSON.parse(renderJson('{{query_2.rows}}', ctx()))).toEqual([]);
    expect(JSON.parse(renderJson('[{{query_2.row_count}}]', ctx()))).toEqual([0]);
  });

  it('bigint, Date and Buffer values do not break the JSON', () => {
    const c = ctx([10n ** 20n, new Date('2026-01-02T03:04:05Z'), Buffer.from('hi')]);
    const parsed = JSON.parse(renderJson('{{query_1.rows}}', c));
    expect(parsed.map((r: { v: unknown }) => r.v)).toEqual([
      '100000000000000000000',
      '2026-01-02T03:04:05.000Z',
      'aGk=',
    ]);
  });
});

describe('FORM_URLENCODED and RAW modes', () => {
  it('form values are percent-encoded and decode back exactly', () => {
    const out = renderForm('name={{workflow.name}}&rows={{query_1.rows}}&n={{query_1.row_count}}', ctx());
    const p = new URLSearchParams(out);
    expect(p.get('name')).toBe(ctx().workflow.name);
    expect(JSON.parse(p.get('rows')!).map((r: { v: string }) => r.v)).toEqual(HOSTILE);
    expect(p.get('n')).toBe(String(HOSTILE.length));
    expect([...p.keys()]).toEqual(['name', 'rows', 'n']);
  });

  it('raw mode inserts text as it is', () => {
    expect(renderText('{{workflow.name}}|{{run.scheduledFor}}|{{query_2.columns}}', ctx())).toBe(
      `${ctx().workflow.name}||["x"]`,
    );
  });
});

describe('email rendering', () => {
  it('escapes values and raw HTML in the Markdown; tables are HTML with escaped cells', () => {
    const html = renderBodyHtml(
      '# Report {{workflow.name}}\n\n<script>alert(1)</script>\n\n{{query_1.table}}\n\nTotal: **{{query_1.row_count}}** [link](javascript:alert(1)) [ok](https://example.com/{{run.id}})',
      ctx(),
    );
    expect(html).not.toContain('<script');
    expect(html).not.toContain('</script>');
    expect(html).not.toContain('javascript:');
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(html).toContain('<h1>Report Daily &quot;sales&quot; &lt;/script&gt; \\ \n report</h1>');
    expect(html).toContain('<table');
    expect(html).not.toMatch(/<p>\s*<table/);
    expect(html).toContain(
      '<th style="border:1px solid #ccc;padding:4px 8px;text-align:left;background:#f4f4f4">v</th>',
    );
    expect(html).toContain('&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(html).toContain(`<strong>${HOSTILE.length}</strong>`);
    expect(html).toContain('<a href="https://example.com/run-1">ok</a>');
    // A value that looks like a placeholder or Markdown stays literal.
    expect(html).toContain('{{run.id}}');
  });

  it('subject has no line breaks; CSV attachments and includeTable', () => {
    expect(renderSubject('Report {{workflow.name}}: {{query_1.row_count}} rows', ctx())).toBe(
      'Report Daily "sales" </script> \\   report: 11 rows',
    );
    const m = buildEmail(
      {
        to: ['a@example.com'],
        cc: [],
        subject: 's',
        body: 'Hello',
        attachCsv: true,
        includeTable: true,
        critical: true,
      },
      ctx(),
    );
    expect(m.attachments.map((a) => a.filename)).toEqual(['query_1-q1.csv', 'query_2-empty.csv']);
    expect(m.attachments[1].content).toBe('x\r\n');
    expect(m.html).toContain('<h3 style="font-family:sans-serif">q1</h3><table');
    expect(m.text).toContain('Hello\n\nq1\nv\tn\n');
  });
});

describe('email size', () => {
  it('attachments over the limit fail with a clear error instead of a broken send', () => {
    const big = 'x'.repeat(1024);
    const c = ctx();
    c.steps[0] = {
      name: 'big',
      columns: ['v'],
      rows: Array.from({ length: 7 * 1024 }, () => ({ v: big })),
      rowCount: 7 * 1024,
    };
    const cfg = {
      to: ['a@example.com'],
      cc: [],
      subject: 's',
      body: '',
      attachCsv: true,
      includeTable: false,
      critical: true,
    };
    expect(() => buildEmail(cfg, c)).toThrow(/CSV attachments are 7\.0 MiB, over the 6 MiB email limit/);
    expect(buildEmail({ ...cfg, attachCsv: false }, c).attachments).toEqual([]);
  });
});

describe('CSV (RFC 4180)', () => {
  it('quotes, CRLF, formula injection and types', () => {
    const csv = toCsv(
      ['a', 'b,c'],
      [
        { a: 'plain', 'b,c': 'has "quote", comma' },
        { a: 'line\r\nbreak', 'b,c': null },
        { a: '=1+2', 'b,c': '-12.5' },
        { a: '+cmd', 'b,c': '@SUM(A1)' },
        { a: -3, 'b,c': { x: 1 } },
        { a: '\tTAB', 'b,c': true },
      ],
    );
    expect(csv).toBe(
      'a,"b,c"\r\n' +
        'plain,"has ""quote"", comma"\r\n' +
        '"line\r\nbreak",\r\n' +
        "'=1+2,-12.5\r\n" +
        "'+cmd,'@SUM(A1)\r\n" +
        '-3,"{""x"":1}"\r\n' +
        "'\tTAB,true\r\n",
    );
  });
});
