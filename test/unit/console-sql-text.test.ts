import { describe, expect, it } from 'vitest';
import { namespaceOf } from '../../console/src/components/code-editor';
import { placeholders, quoteIdent } from '../../console/src/components/sql-text';
import { scanMongo } from '../../shared/saved-queries/mongo-params';
import { type SqlDialect, scanSql } from '../../shared/saved-queries/tokenize';

/**
 * The console's SQL text helpers: the placeholders its saved-query form turns into parameter
 * definitions must be the ones the API binds (held to the API's own lexer here), and a name inserted
 * from the Schema panel must read back as that name in the dialect.
 */
const SAMPLES: Array<[string, SqlDialect[]]> = [
  [
    'SELECT * FROM t WHERE a = {{a}} AND b = {{ b }} AND c = {{a}}',
    ['POSTGRES', 'MYSQL', 'MARIADB', 'MSSQL', 'SQLITE'],
  ],
  [
    "SELECT '{{not}}' AS s, {{yes}} -- {{comment}}\n/* {{block}} */",
    ['POSTGRES', 'MYSQL', 'MARIADB', 'MSSQL', 'SQLITE'],
  ],
  ['SELECT "{{quoted}}" FROM t WHERE x = {{x}}', ['POSTGRES', 'MSSQL', 'SQLITE']],
  ['SELECT $$ {{dollar}} $$, $tag$ {{tagged}} $tag$, {{after}}', ['POSTGRES']],
  ["SELECT 'it''s {{still}} text', {{real}}", ['POSTGRES', 'MSSQL', 'SQLITE']],
  ["SELECT 'a\\' {{escaped}}', `{{ident}}`, {{real}} # {{hash}}", ['MYSQL', 'MARIADB']],
  ['SELECT [{{bracket}}], {{real}} FROM t', ['MSSQL']],
  ['SELECT {{a_1}}, {{_b}}, {{1bad}}, {{ c }}', ['POSTGRES', 'SQLITE']],
];

describe('console placeholders', () => {
  for (const [sql, dialects] of SAMPLES)
    for (const d of dialects)
      it(`${d}: ${sql.slice(0, 50)}`, () => {
        const server = [...new Set(scanSql(sql, d).placeholders.map((p) => p.name))];
        expect(placeholders(sql, d)).toEqual(server);
      });

  it('MongoDB: every placeholder in the JSON, as the API finds them', () => {
    const q = '{"collection": "orders", "filter": {"status": "{{status}}", "total": {"$gte": "{{min}}"}}}';
    expect(placeholders(q, 'MONGODB')).toEqual(['status', 'min']);
    expect([...new Set(scanMongo(q).names)]).toEqual(['status', 'min']);
  });
});

describe('console quoteIdent', () => {
  it('leaves plain names bare and quotes the rest the way each dialect reads them back', () => {
    expect(quoteIdent('orders', 'POSTGRES')).toBe('orders');
    expect(quoteIdent('Orders', 'POSTGRES')).toBe('"Orders"');
    expect(quoteIdent('Orders', 'MYSQL')).toBe('Orders');
    expect(quoteIdent('order', 'SQLITE')).toBe('"order"');
    expect(quoteIdent('user', 'MSSQL')).toBe('[user]');
    expect(quoteIdent('Display Name', 'POSTGRES')).toBe('"Display Name"');
    expect(quoteIdent('a"b', 'POSTGRES')).toBe('"a""b"');
    expect(quoteIdent('a`b c', 'MARIADB')).toBe('`a``b c`');
    expect(quoteIdent('a]b', 'MSSQL')).toBe('[a]]b]');
    expect(quoteIdent('<img src=x>', 'SQLITE')).toBe('"<img src=x>"');
    expect(quoteIdent('orders', 'MONGODB')).toBe('"orders"');
  });
});

describe('console completion namespace', () => {
  const col = (name: string, type = 'text') => ({ name, type, nullable: true, primaryKey: false });
  const table = (name: string, schema?: string, columns = [col('id', 'integer')]) => ({
    name,
    ...(schema ? { schema } : {}),
    kind: 'table' as const,
    columns,
    primaryKey: [],
    foreignKeys: [],
    rowEstimate: null,
  });

  it('puts tables of the most common schema at the top level too, with columns typed and annotated', () => {
    const { namespace, defaultSchema } = namespaceOf({
      tables: [table('orders', 'public', [col('status')]), table('plans', 'public'), table('audit', 'ops')],
      notes: [
        {
          id: 'n1',
          connectionId: 'c',
          tableName: 'orders',
          columnName: 'status',
          annotation: 'paid or open',
          dataType: null,
          examples: null,
          source: 'user',
          createdAt: '',
          updatedAt: '',
        },
      ],
    });
    expect(defaultSchema).toBe('public');
    const ns = namespace as Record<string, any>;
    expect(Object.keys(ns).sort()).toEqual(['ops', 'public']);
    expect(Object.keys(ns.public.children).sort()).toEqual(['orders', 'plans']);
    expect(ns.public.children.orders.children).toEqual([
      { label: 'status', type: 'property', detail: 'text', info: 'paid or open' },
    ]);
  });

  it('keeps tables without a schema (SQLite) at the top level', () => {
    const { namespace, defaultSchema } = namespaceOf({ tables: [table('accounts')], notes: [] });
    expect(defaultSchema).toBeUndefined();
    expect((namespace as Record<string, any>).accounts.self).toMatchObject({
      label: 'accounts',
      detail: 'table',
    });
  });
});
