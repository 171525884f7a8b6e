import { describe, expect, it } from 'vitest';
import { bindSql } from '../../shared/saved-queries/bind';
import { bindMongo, scanMongo } from '../../shared/saved-queries/mongo-params';
import { bindQuery, checkDefinitions, guardText } from '../../shared/saved-queries/params';
import { type SqlDialect, scanSql } from '../../shared/saved-queries/tokenize';
import { type Canonical, checkValue, type ParamDef, resolveValues } from '../../shared/saved-queries/values';

const names = (sql: string, d: SqlDialect) => scanSql(sql, d).placeholders.map((p) => p.name);
const ALL: SqlDialect[] = ['POSTGRES', 'MYSQL', 'MARIADB', 'MSSQL', 'SQLITE'];
const def = (name: string, type: ParamDef['type'], extra: Partial<ParamDef> = {}): ParamDef => ({
  name,
  type,
  required: false,
  ...extra,
});

describe('placeholder tokenizer', () => {
  it.each(ALL)('finds plain placeholders, with optional inner spaces (%s)', (d) => {
    expect(names('SELECT * FROM t WHERE a = {{a}} AND b = {{ b }} AND c={{c_1}}', d)).toEqual([
      'a',
      'b',
      'c_1',
    ]);
  });

  it.each(ALL)('ignores placeholders inside single-quoted strings, with doubled quotes (%s)', (d) => {
    expect(names("SELECT '{{x}}', 'it''s {{y}}' , {{z}}", d)).toEqual(['z']);
  });

  it.each(ALL)('ignores placeholders in -- line comments and /* block */ comments (%s)', (d) => {
    expect(names('SELECT 1 -- {{a}}\n, {{b}} /* {{c}} */ , {{d}}', d)).toEqual(['b', 'd']);
  });

  it('treats double quotes as identifiers on PostgreSQL, SQLite and SQL Server', () => {
    for (const d of ['POSTGRES', 'SQLITE', 'MSSQL'] as const)
      expect(names('SELECT "{{col}}", "a""{{b}}" FROM t WHERE x = {{v}}', d)).toEqual(['v']);
  });

  it('treats double quotes as strings with backslash escapes on MySQL and MariaDB', () => {
    for (const d of ['MYSQL', 'MARIADB'] as const)
      expect(names('SELECT "a\\" {{in}}", {{out}}', d)).toEqual(['out']);
  });

  it('honours backslash escapes in MySQL single-quoted strings', () => {
    expect(names("SELECT 'a\\' {{in}}', {{out}}", 'MYSQL')).toEqual(['out']);
  });

  it('does not treat backslash as an escape in standard PostgreSQL strings, but does in E strings', () => {
    expect(names("SELECT 'a\\', {{out}}", 'POSTGRES')).toEqual(['out']);
    expect(names("SELECT E'a\\' {{in}}', {{out}}", 'POSTGRES')).toEqual(['out']);
    expect(names("SELECT e'a\\' {{in}}', {{out}}", 'POSTGRES')).toEqual(['out']);
  });

  it('skips PostgreSQL dollar-quoted strings, tagged and untagged', () => {
    expect(names('SELECT $$ {{a}} $$, $tag$ {{b}} $x$ {{c}} $tag$, {{d}}', 'POSTGRES')).toEqual(['d']);
  });

  it('does not take $ inside a PostgreSQL identifier for a dollar quote', () => {
    expect(names('SELECT a$b$ , {{x}} FROM t$1', 'POSTGRES')).toEqual(['x']);
  });

  it('skips nested block comments on PostgreSQL and SQL Server only', () => {
    const sql = 'SELECT /* a /* b */ {{hidden}} */ {{shown}}';
    expect(names(sql, 'POSTGRES')).toEqual(['shown']);
    expect(names(sql, 'MSSQL')).toEqual(['shown']);
    // MySQL and SQLite end the comment at the first */
    expect(names(sql, 'MYSQL')).toEqual(['hidden', 'shown']);
    expect(names(sql, 'SQLITE')).toEqual(['hidden', 'shown']);
  });

  it('skips backtick identifiers on MySQL, MariaDB and SQLite', () => {
    for (const d of ['MYSQL', 'MARIADB', 'SQLITE'] as const)
      expect(names('SELECT `{{a}}`, `x``{{b}}` , {{c}}', d)).toEqual(['c']);
  });

  it('skips bracket identifiers on SQL Server (with ]] escapes) and SQLite', () => {
    expect(names('SELECT [{{a}}], [x]]{{b}}], {{c}}', 'MSSQL')).toEqual(['c']);
    expect(names('SELECT [{{a}}], {{c}}', 'SQLITE')).toEqual(['c']);
  });

  it('treats # as a comment on MySQL only', () => {
    expect(names('SELECT 1 # {{a}}\n, {{b}}', 'MARIADB')).toEqual(['b']);
  });

  it('requires whitespace after -- for a MySQL comment', () => {
    expect(names('SELECT 1--{{a}}', 'MYSQL')).toEqual(['a']);
    expect(names('SELECT 1-- {{a}}', 'MYSQL')).toEqual([]);
    expect(names('SELECT 1--{{a}}', 'POSTGRES')).toEqual([]);
  });

  it('reports malformed placeholders', () => {
    const scan = scanSql('SELECT {{1x}}, {{ a b }}, {{}}', 'POSTGRES');
    expect(scan.placeholders).toEqual([]);
    expect(scan.problems).toHaveLength(3);
    expect(scan.problems[0].message).toMatch(/Malformed placeholder/);
  });

  it('reports raw driver markers that would collide with bound parameters', () => {
    expect(scanSql('SELECT $1', 'POSTGRES').problems[0].message).toMatch(/\$1/);
    expect(scanSql('SELECT ?', 'MYSQL').problems).toHaveLength(1);
    expect(scanSql('SELECT ?', 'SQLITE').problems).toHaveLength(1);
    expect(scanSql('SELECT @p1', 'MSSQL').problems).toHaveLength(1);
    // but not inside strings, nor the PostgreSQL jsonb ? operator, nor other SQL Server variables
    expect(scanSql("SELECT '?', '$1'", 'MYSQL').problems).toEqual([]);
    expect(scanSql("SELECT doc ? 'k' FROM t", 'POSTGRES').problems).toEqual([]);
    expect(scanSql('SELECT @page, @@VERSION', 'MSSQL').problems).toEqual([]);
  });

  it('treats an unterminated string as running to the end (nothing inside is a placeholder)', () => {
    expect(names("SELECT {{a}}, 'open {{b}}", 'POSTGRES')).toEqual(['a']);
  });
});

describe('binding SQL placeholders as driver parameters', () => {
  const values = (o: Record<string, Canonical>) => new Map(Object.entries(o));

  it('numbers PostgreSQL parameters once per name and reuses them', () => {
    const defs = [
      def('a', 'integer'),
      def('s', 'string'),
      def('d', 'date'),
      def('t', 'datetime'),
      def('b', 'boolean'),
      def('n', 'number'),
    ];
    const b = bindSql(
      'SELECT {{a}}, {{s}}, {{a}}, {{d}}, {{t}}, {{b}}, {{n}}',
      'POSTGRES',
      defs,
      values({ a: 7, s: 'x', d: '2024-02-29', t: new Date('2024-01-02T03:04:05Z'), b: true, n: 1.5 }),
    );
    expect(b.text).toBe('SELECT $1, $2, $1, $3, $4, $5, $6');
    expect(b.params).toEqual([7, 'x', '2024-02-29', '2024-01-02T03:04:05.000Z', true, 1.5]);
  });

  it('binds ? once per use on MySQL, MariaDB and SQLite (a repeated name binds twice)', () => {
    for (const d of ['MYSQL', 'MARIADB', 'SQLITE'] as const) {
      const b = bindSql(
        'SELECT {{a}} + {{a}}, {{f}}',
        d,
        [def('a', 'integer'), def('f', 'boolean')],
        values({ a: 2, f: false }),
      );
      expect(b.text).toBe('SELECT ? + ?, ?');
      expect(b.params).toEqual([2, 2, 0]);
    }
  });

  it('writes date-times for MySQL, MariaDB and SQLite as UTC YYYY-MM-DD HH:MM:SS[.fff]', () => {
    const defs = [def('t', 'datetime')];
    expect(
      bindSql('SELECT {{t}}', 'MARIADB', defs, values({ t: new Date('2024-01-02T03:04:05+02:00') })).params,
    ).toEqual(['2024-01-02 01:04:05']);
    expect(
      bindSql('SELECT {{t}}', 'SQLITE', defs, values({ t: new Date('2024-01-02T03:04:05.25Z') })).params,
    ).toEqual(['2024-01-02 03:04:05.250']);
  });

  it('uses @pN on SQL Server, one per name', () => {
    const b = bindSql(
      'SELECT {{x}}, {{y}}, {{x}}',
      'MSSQL',
      [def('x', 'string'), def('y', 'integer')],
      values({ x: 'a', y: 1 }),
    );
    expect(b.text).toBe('SELECT @p1, @p2, @p1');
    expect(b.params).toEqual(['a', 1]);
  });

  it('keeps placeholders inside strings and comments as text, and never puts a value in the text', () => {
    const evil = "'; DROP TABLE x; --";
    const b = bindSql(
      "SELECT '{{s}}' AS lit, {{s}} AS val -- {{s}}",
      'POSTGRES',
      [def('s', 'string')],
      values({ s: evil }),
    );
    expect(b.text).toBe("SELECT '{{s}}' AS lit, $1 AS val -- {{s}}");
    expect(b.params).toEqual([evil]);
    expect(b.text).not.toContain('DROP');
  });

  it('binds null for an absent optional value', () => {
    expect(bindSql('SELECT {{a}}', 'MYSQL', [def('a', 'integer')], values({})).params).toEqual([null]);
  });
});

describe('parameter values', () => {
  it.each([
    ['string', 'x', 'x'],
    ['number', 1.25, 1.25],
    ['integer', -3, -3],
    ['boolean', false, false],
    ['date', '2024-02-29', '2024-02-29'],
  ] as const)('accepts a %s', (type, v, out) => {
    expect(checkValue(type, v)).toEqual({ ok: true, value: out });
  });

  it('normalizes date-times to UTC, with or without an offset (none means UTC)', () => {
    const a = checkValue('datetime', '2024-05-01T13:45:00+02:00');
    const b = checkValue('datetime', '2024-05-01 11:45');
    const c = checkValue('datetime', '2024-05-01T11:45:00.123456Z');
    expect(a.ok && (a.value as Date).toISOString()).toBe('2024-05-01T11:45:00.000Z');
    expect(b.ok && (b.value as Date).toISOString()).toBe('2024-05-01T11:45:00.000Z');
    expect(c.ok && (c.value as Date).toISOString()).toBe('2024-05-01T11:45:00.123Z');
  });

  it.each([
    ['string', 5],
    ['number', '5'],
    ['number', Number.NaN],
    ['integer', 1.5],
    ['integer', '2'],
    ['integer', 2 ** 60],
    ['boolean', 'true'],
    ['boolean', 1],
    ['date', '2023-02-29'],
    ['date', '2024-1-5'],
    ['date', 20240105],
    ['datetime', '2024-05-01'],
    ['datetime', '2024-05-01T25:00:00Z'],
    ['datetime', 'yesterday'],
    ['string', 'x'.repeat(10_001)],
  ] as const)('rejects a %s given case %#', (type, v) => {
    expect(checkValue(type, v).ok).toBe(false);
  });

  it('reports unknown, missing required and wrongly typed values, each with its path', () => {
    const defs = [
      def('a', 'integer', { required: true }),
      def('b', 'string', { required: true }),
      def('c', 'date'),
    ];
    const r = resolveValues(defs, { b: 3, zzz: 1 });
    expect(r.issues.map((i) => [i.path, i.code])).toEqual([
      ['body.params.zzz', 'unknown_parameter'],
      ['body.params.a', 'missing_parameter'],
      ['body.params.b', 'invalid_type'],
    ]);
  });

  it('uses defaults for absent or null values, and null for optional values without one', () => {
    const defs = [
      def('a', 'integer', { required: true, default: 10 }),
      def('b', 'string'),
      def('c', 'boolean', { default: true }),
    ];
    const r = resolveValues(defs, { c: null });
    expect(r.issues).toEqual([]);
    expect(Object.fromEntries(r.values)).toEqual({ a: 10, b: null, c: true });
  });
});

describe('save-time definition checks', () => {
  it('accepts a query whose placeholders and definitions match', () => {
    expect(
      checkDefinitions('POSTGRES', 'SELECT * FROM t WHERE a = {{a}} OR a = {{a}}', [def('a', 'integer')]),
    ).toEqual([]);
  });

  it('rejects a placeholder without a definition and a definition without a placeholder', () => {
    const issues = checkDefinitions('POSTGRES', "SELECT {{a}}, '{{b}}'", [def('b', 'string')]);
    expect(issues.map((i) => [i.path, i.code])).toEqual([
      ['body.parameters.0.name', 'unused_parameter'],
      ['body.query', 'undefined_parameter'],
    ]);
  });

  it('rejects duplicate definitions and defaults of the wrong type', () => {
    const issues = checkDefinitions('SQLITE', 'SELECT {{a}}', [
      def('a', 'integer', { default: 'x' }),
      def('a', 'integer'),
    ]);
    expect(issues.map((i) => [i.path, i.code])).toEqual([
      ['body.parameters.0.default', 'invalid_type'],
      ['body.parameters.1.name', 'duplicate_parameter'],
    ]);
  });

  it('reports malformed placeholders and raw markers with line and column', () => {
    const issues = checkDefinitions('MYSQL', 'SELECT 1\nWHERE a = ?', []);
    expect(issues[0]).toMatchObject({ path: 'body.query', code: 'invalid_placeholder' });
    expect(issues[0].message).toMatch(/line 2, column 11/);
  });

  it('gives the guard the text with dialect markers in place', () => {
    expect(guardText('POSTGRES', 'SELECT {{a}} + {{a}}', [def('a', 'integer')])).toBe('SELECT $1 + $1');
    expect(guardText('MARIADB', 'SELECT {{a}}', [def('a', 'integer')])).toBe('SELECT ?');
  });
});

describe('MongoDB placeholders', () => {
  const q = JSON.stringify({
    collection: 'orders',
    filter: { status: '{{status}}', qty: { $gte: '{{min}}' }, paid: '{{paid}}', at: { $lt: '{{before}}' } },
    limit: '{{limit}}',
  });
  const defs = [
    def('status', 'string'),
    def('min', 'number'),
    def('paid', 'boolean'),
    def('before', 'datetime'),
    def('limit', 'integer'),
  ];

  it('finds whole-string placeholders', () => {
    expect(scanMongo(q).names).toEqual(['status', 'min', 'paid', 'before', 'limit']);
    expect(checkDefinitions('MONGODB', q, defs)).toEqual([]);
  });

  it('replaces them by typed JSON values (dates as Extended JSON), never by text', () => {
    const out = JSON.parse(
      bindMongo(
        q,
        defs,
        new Map<string, Canonical>([
          ['status', '"}, "$where": "sleep(1000)'],
          ['min', 5],
          ['paid', true],
          ['before', new Date('2024-01-01T00:00:00Z')],
          ['limit', 3],
        ]),
      ),
    );
    expect(out).toEqual({
      collection: 'orders',
      filter: {
        status: '"}, "$where": "sleep(1000)',
        qty: { $gte: 5 },
        paid: true,
        at: { $lt: { $date: '2024-01-01T00:00:00.000Z' } },
      },
      limit: 3,
    });
  });

  it('rejects placeholders inside longer strings or in keys, and text that is not JSON', () => {
    expect(checkDefinitions('MONGODB', '{"collection":"c","filter":{"a":"x{{p}}"}}', [])[0].code).toBe(
      'invalid_placeholder',
    );
    expect(checkDefinitions('MONGODB', '{"collection":"c","filter":{"{{p}}":1}}', [])[0].code).toBe(
      'invalid_placeholder',
    );
    expect(checkDefinitions('MONGODB', '{"collection":', [])[0].code).toBe('invalid_json');
  });

  it('binds through bindQuery without driver parameters', () => {
    const r = bindQuery(
      'MONGODB',
      '{"collection":"c","filter":{"d":"{{d}}"}}',
      [def('d', 'date')],
      new Map([['d', '2024-03-01']]),
    );
    expect(r.params).toBeUndefined();
    expect(JSON.parse(r.sql).filter.d).toEqual({ $date: '2024-03-01T00:00:00.000Z' });
  });
});
