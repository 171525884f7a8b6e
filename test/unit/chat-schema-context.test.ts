import { describe, expect, it } from 'vitest';
import {
  buildSchemaContext,
  CATALOG_BUDGET,
  findTables,
  MAX_DETAILED_TABLES,
  type NoteLike,
  rankTables,
  renderTable,
  SCHEMA_BUDGET,
  searchTables,
  words,
} from '../../shared/chat/schema-context';
import type { TableInfo } from '../../shared/connections/drivers/types';

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
    expect(ctx.text).toMatch(/Other tables \(\d+; not described above/);
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
  it('search_tables finds tables by keyword with their columns', () => {
    const found = searchTables(bigSchema(30), [], 'webhook');
    expect(found.length).toBe(3);
    expect(found[0]).toMatch(/^sys_webhook_\d{3}\(id, created_at, updated_at, payload/);
  });

  it('describe_tables resolves names case-insensitively, with or without quotes or schema', () => {
    const tables = [{ ...table('sales.orders', ['id']), schema: 'sales' }, table('customers', ['id'])];
    const { found, missing } = findTables(tables, ['"Customers"', 'orders', 'sales.orders', 'nope']);
    expect(found.map((t) => t.name)).toEqual(['customers', 'sales.orders']);
    expect(missing).toEqual(['nope']);
  });
});
