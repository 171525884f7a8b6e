import { describe, expect, it } from 'vitest';
import {
  buildSchemaContext,
  CATALOG_BUDGET,
  estimateTokens,
  findTables,
  MAX_DETAILED_TABLES,
  type NoteLike,
  rankTables,
  renderTable,
  SCHEMA_BUDGET,
  SCHEMA_TOKEN_BUDGET,
  tablesInSql,
  words,
} from '../../shared/chat/schema-context';
import { searchSchema } from '../../shared/chat/schema-search';
import { terms } from '../../shared/connections/schema-index';
import type { TableInfo } from '../../shared/databases/drivers/types';

const table = (
  name: string,
  columns: string[],
  fks: Array<[string, string]> = [],
  rowEstimate: number | null = 10,
): TableInfo => ({
  name,
  kind: 'table',
  columns: columns.map((c, i) => ({
    name: c,
    type: i === 0 ? 'integer' : 'text',
    nullable: i !== 0,
    primaryKey: i === 0,
  })),
  primaryKey: [columns[0]],
  foreignKeys: fks.map(([col, ref]) => ({ columns: [col], referencedTable: ref, referencedColumns: ['id'] })),
  rowEstimate,
});

const FILLER = ['audit', 'cache', 'session', 'metric', 'job', 'queue', 'token', 'setting', 'flag', 'webhook'];
const bigSchema = (n = 300): TableInfo[] => [
  table('customers', ['id', 'name', 'segment', 'country']),
  table('invoices', ['id', 'customer_id', 'amount', 'status', 'issued_on'], [['customer_id', 'customers']]),
  table(
    'invoice_lines',
    ['id', 'invoice_id', 'product_id', 'quantity', 'price'],
    [
      ['invoice_id', 'invoices'],
      ['product_id', 'products'],
    ],
  ),
  table('products', ['id', 'sku', 'title', 'list_price']),
  table('fx_daily', ['id', 'ccy', 'rate', 'day']),
  ...Array.from({ length: n }, (_, i) =>
    table(`sys_${FILLER[i % FILLER.length]}_${String(i).padStart(3, '0')}`, [
      'id',
      'created_at',
      'updated_at',
      'payload',
      'kind',
      'ref_id',
      'note',
      'version',
    ]),
  ),
];

describe('question words', () => {
  it('splits snake_case and camelCase, lowercases, drops stop words and folds plurals', () => {
    expect(words('How many unpaidInvoices per customer_segment?')).toEqual([
      'unpaid',
      'invoice',
      'customer',
      'segment',
    ]);
    expect(words('categories, addresses, boxes, status, class')).toEqual([
      'category',
      'address',
      'box',
      'status',
      'class',
    ]);
    expect(words('the 2024 orders')).toEqual(['order']);
  });
});

describe('table selection', () => {
  it('ranks tables by name, then columns, then annotations', () => {
    const tables = bigSchema(20);
    const ranked = rankTables(tables, [], 'total unpaid invoice amount per customer').map(
      (r) => r.table.name,
    );
    expect(ranked.slice(0, 2).sort()).toEqual(['customers', 'invoices']);
    const notes: NoteLike[] = [
      { tableName: 'fx_daily', columnName: null, annotation: 'Exchange rates to convert revenue into euros' },
    ];
    expect(rankTables(tables, notes, 'convert revenue to euros')[0].table.name).toBe('fx_daily');
    expect(rankTables(tables, [], 'convert revenue to euros').map((r) => r.table.name)).not.toContain(
      'fx_daily',
    );
  });

  it('gives a small schema whole', () => {
    const tables = bigSchema(0);
    const ctx = buildSchemaContext(tables, [], 'anything');
    expect(ctx.partial).toBe(false);
    expect(ctx.detailed).toEqual(tables.map((t) => t.name));
    for (const t of tables) expect(ctx.text).toContain(`TABLE ${t.name}`);
  });

  it('narrows a 300-table schema to the relevant tables and their neighbours, within the budget', () => {
    const tables = bigSchema(300);
    const ctx = buildSchemaContext(tables, [], 'Which products sell best by quantity?');
    expect(ctx.partial).toBe(true);
    expect(ctx.total).toBe(305);
    expect(ctx.text.length).toBeLessThanOrEqual(SCHEMA_BUDGET + CATALOG_BUDGET + 200);
    expect(ctx.detailed).toContain('products');
    expect(ctx.detailed).toContain('invoice_lines'); // matches "quantity" and references products
    expect(ctx.detailed).toContain('invoices'); // referenced by invoice_lines
    expect(ctx.detailed.length).toBeLessThanOrEqual(MAX_DETAILED_TABLES);
    expect(ctx.text).toMatch(/Other tables \(\d+, the next best matches first; not described above/);
  });

  it('stays bounded however large the schema, listing as many other names as fit', () => {
    const tables = bigSchema(3000);
    const ctx = buildSchemaContext(tables, [], 'unpaid invoices');
    expect(ctx.text.length).toBeLessThanOrEqual(SCHEMA_BUDGET + CATALOG_BUDGET + 200);
    expect(ctx.detailed.slice(0, 1)).toEqual(['invoices']);
    expect(ctx.text).toMatch(/… and \d+ more$/);
  });

  it('counts earlier questions of the conversation, so a follow-up keeps its tables', () => {
    const tables = bigSchema(300);
    const ctx = buildSchemaContext(tables, [], 'and only for 2024?', [
      'total invoice amount by customer segment',
    ]);
    expect(ctx.detailed).toContain('invoices');
    expect(ctx.detailed).toContain('customers');
  });

  it('falls back to the largest tables when no word matches', () => {
    const tables = bigSchema(300);
    tables.find((t) => t.name === 'sys_job_004')!.rowEstimate = 9_999_999;
    const ctx = buildSchemaContext(tables, [], 'xyzzy');
    expect(ctx.detailed[0]).toBe('sys_job_004');
  });
});

describe('table rendering', () => {
  it('shows types, keys, references and annotations with examples', () => {
    const t = table('invoices', ['id', 'customer_id', 'status'], [['customer_id', 'customers']], 1234);
    const text = renderTable(t, [
      { tableName: 'invoices', columnName: null, annotation: 'One row per invoice' },
      { tableName: 'INVOICES', columnName: 'status', annotation: 'Payment state', examples: 'paid, unpaid' },
    ]);
    expect(text).toBe(
      [
        'TABLE invoices (~1,234 rows) -- One row per invoice',
        '  id integer PK',
        '  customer_id text → customers.id',
        '  status text -- Payment state; examples: paid, unpaid',
      ].join('\n'),
    );
  });

  it('keeps key, annotated and question-matching columns when a table has too many', () => {
    const cols = ['id', ...Array.from({ length: 100 }, (_, i) => `c${i}`), 'revenue_eur'];
    const text = renderTable(
      table('wide', cols),
      [{ tableName: 'wide', columnName: 'c99', annotation: 'important' }],
      {
        focus: ['revenue'],
        maxColumns: 10,
      },
    );
    expect(text).toContain('  id integer PK');
    expect(text).toContain('c99 text -- important');
    expect(text).toContain('revenue_eur');
    expect(text).toContain('… +92 more columns');
  });
});

describe('lookup tools', () => {
  it('search_schema (searchSchema) finds tables by keyword, described with their columns', () => {
    const found = searchSchema({ tables: bigSchema(30) }, 'webhook');
    expect(found.length).toBe(3);
    expect(found[0].table).toMatch(/^sys_webhook_\d{3}$/);
    expect(found[0].description).toMatch(
      /^TABLE sys_webhook_\d{3} \(~10 rows\): id integer PK, created_at text/,
    );
    expect(found[0].score).toBeGreaterThan(0);
    expect(searchSchema({ tables: bigSchema(30) }, 'webhook', 2)).toHaveLength(2);
    expect(searchSchema({ tables: bigSchema(30) }, 'the of and')).toEqual([]);
  });

  it('describe_tables resolves names case-insensitively, with or without quotes or schema', () => {
    const tables = [{ ...table('sales.orders', ['id']), schema: 'sales' }, table('customers', ['id'])];
    const { found, missing } = findTables(tables, ['"Customers"', 'orders', 'sales.orders', 'nope']);
    expect(found.map((t) => t.name)).toEqual(['customers', 'sales.orders']);
    expect(missing).toEqual(['nope']);
  });
});

describe('retrieval for large schemas (issue 16)', () => {
  const named = (
    name: string,
    columns: Array<[string, boolean?]>,
    fks: Array<[string, string, string]> = [],
  ): TableInfo => ({
    name,
    schema: name.includes('.') ? name.split('.')[0] : undefined,
    kind: 'table',
    columns: columns.map(([c, pk]) => ({ name: c, type: 'text', nullable: !pk, primaryKey: !!pk })),
    primaryKey: columns.filter(([, pk]) => pk).map(([c]) => c),
    foreignKeys: fks.map(([col, ref, refCol]) => ({
      columns: [col],
      referencedTable: ref,
      referencedColumns: [refCol],
    })),
    rowEstimate: 100,
  });
  const fillers = (n: number) =>
    Array.from({ length: n }, (_, i) =>
      named(`ops.sys_${FILLER[i % FILLER.length]}_${i}`, [['id', true], ['payload'], ['kind'], ['status']]),
    );

  it('splits identifiers and stems terms, so CustomerID and plural names meet the question', () => {
    expect(terms('CustomerID')).toEqual(['custom', 'id']);
    expect(terms('order_items')).toEqual(terms('Order Item'));
    expect(terms('HTTPServerLogs2024')).toEqual(['http', 'server', 'log']);
    const tables = [named('crm.Customers', [['CustomerID', true], ['Segment']]), ...fillers(50)];
    expect(rankTables(tables, [], 'which customer segment is largest')[0].table.name).toBe('crm.Customers');
  });

  it('ranks the table whose sampled values contain a word of the question', () => {
    const tables = [
      named('debit.customers', [['CustomerID', true], ['Segment'], ['Currency']]),
      named('debit.gasstations', [['GasStationID', true], ['Segment'], ['Country']]),
      ...fillers(50),
    ];
    const notes: NoteLike[] = [
      { tableName: 'debit.customers', columnName: 'Segment', annotation: 'text', examples: 'SME, KAM, LAM' },
      { tableName: 'debit.customers', columnName: 'Currency', annotation: 'text', examples: 'CZK, EUR' },
      {
        tableName: 'debit.gasstations',
        columnName: 'Segment',
        annotation: 'text',
        examples: 'Premium, Other',
      },
    ];
    expect(rankTables(tables, notes, 'least consumption in LAM')[0].table.name).toBe('debit.customers');
    expect(rankTables(tables, notes, 'paid in CZK')[0].table.name).toBe('debit.customers');
    expect(rankTables(tables, [], 'paid in CZK')).toEqual([]);
    // In the one-line form, the matched column shows its values.
    const ctx = buildSchemaContext(
      [...tables, ...fillers(400)],
      notes.concat(
        Array.from({ length: 8 }, (_, i) => ({
          tableName: `ops.sys_audit_${i * 10}`,
          columnName: null,
          annotation: 'LAM audit '.repeat(60),
        })),
      ),
      'least consumption in LAM',
    );
    expect(ctx.detailed).toContain('debit.customers');
    expect(ctx.text).toMatch(/Segment text.*LAM/);
  });

  it('expands along declared foreign keys and key-like column names, bridge tables included', () => {
    const tables = [
      named('academic.author', [['aid', true], ['name'], ['homepage']]),
      named('academic.publication', [['pid', true], ['title'], ['citation_num'], ['year']]),
      named('academic.writes', [
        ['aid', true],
        ['pid', true],
      ]),
      named('shop.orders', [['id', true], ['customer_id'], ['total']]),
      named('shop.customers', [['id', true], ['name'], ['country']]),
      named(
        'shop.invoice_lines',
        [['id', true], ['invoice_id'], ['sku']],
        [['invoice_id', 'shop.invoices', 'id']],
      ),
      named('shop.invoices', [['id', true], ['amount']]),
      ...fillers(300),
    ];
    const ctx = buildSchemaContext(tables, [], 'total citations of each author publication');
    expect(ctx.detailed.slice(0, 3).sort()).toEqual([
      'academic.author',
      'academic.publication',
      'academic.writes',
    ]);
    // customer_id → customers, although the question names only the totals.
    expect(buildSchemaContext(tables, [], 'largest order totals').detailed).toContain('shop.customers');
    // A declared key, followed from the referencing table.
    expect(buildSchemaContext(tables, [], 'count lines per sku').detailed).toContain('shop.invoices');
  });

  it('keeps the tables the conversation’s earlier SQL used', () => {
    expect(tablesInSql('SELECT * FROM "sales"."Orders" o JOIN customers c ON c.id = o.cid, x')).toEqual([
      'sales.Orders',
      'customers',
    ]);
    const tables = [named('shop.customers', [['id', true], ['name']]), ...fillers(300)];
    const ctx = buildSchemaContext(tables, [], 'and for last year?', [], {
      earlierSql: ['SELECT name FROM shop.customers'],
    });
    expect(ctx.detailed[0]).toBe('shop.customers');
  });

  it('spends a budget in tokens on the best-ranked tables, and never exceeds the room it is given', () => {
    const wide = (i: number) =>
      named(
        `dw.fact_sales_${i}`,
        Array.from({ length: 200 }, (_, c) => [`sales_measure_${c}`, c === 0] as [string, boolean]),
      );
    const tables = Array.from({ length: 400 }, (_, i) => wide(i));
    const notes: NoteLike[] = tables.flatMap((t) =>
      t.columns.slice(0, 10).map((c) => ({
        tableName: t.name,
        columnName: c.name,
        annotation: 'Sales measure in euros, '.repeat(20),
        examples: 'sales, 1, 2, 3',
      })),
    );
    for (const maxChars of [5_000, 20_000, undefined]) {
      const ctx = buildSchemaContext(tables, notes, 'sales measure', [], { maxChars });
      expect(ctx.text.length).toBeLessThanOrEqual(maxChars ?? SCHEMA_BUDGET + CATALOG_BUDGET);
      expect(ctx.detailed.length).toBeGreaterThan(0);
    }
    expect(SCHEMA_BUDGET).toBe(Math.floor(SCHEMA_TOKEN_BUDGET * 3.5));
    expect(estimateTokens('x'.repeat(35))).toBe(10);
  });
});
