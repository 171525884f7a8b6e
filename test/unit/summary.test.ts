import { describe, expect, it } from 'vitest';
import { deterministicSummary, summarizeSchema } from '../../shared/connections/summary';
import type { SchemaSnapshot, TableInfo } from '../../shared/databases/drivers/types';

const table = (name: string, rows: number | null, extra: Partial<TableInfo> = {}): TableInfo => ({
  name,
  kind: 'table',
  columns: [
    { name: 'id', type: 'integer', nullable: false, primaryKey: true },
    { name: 'name', type: 'text', nullable: true, primaryKey: false },
  ],
  primaryKey: ['id'],
  foreignKeys: [],
  rowEstimate: rows,
  ...extra,
});

const conn = { id: 'c1', name: 'Shop', type: 'POSTGRES' as const, database: 'shop' };

const shop: SchemaSnapshot = {
  tables: [
    table('customers', 1200),
    table('orders', 54000, {
      foreignKeys: [{ columns: ['customer_id'], referencedTable: 'customers', referencedColumns: ['id'] }],
    }),
    table('audit_log', null, { primaryKey: [] }),
    { ...table('order_totals', null), kind: 'view', primaryKey: [] },
  ],
};

describe('deterministic schema summary', () => {
  it('states table counts, row estimates, keys and relationships', () => {
    const text = deterministicSummary(conn, shop);
    expect(text).toContain(
      'Shop is a POSTGRES database (shop) with 3 tables, 1 view, about 55,200 rows in all.',
    );
    expect(text).toContain('Most referenced: customers (by orders).');
    expect(text).toContain(
      '- orders (~54,000 rows; 2 columns): primary key id; customer_id → customers(id).',
    );
    expect(text).toContain('- audit_log (row count unknown; 2 columns): no primary key.');
    expect(text).toContain('- order_totals (view; row count unknown; 2 columns)');
  });

  it('lists the largest tables first', () => {
    const text = deterministicSummary(conn, shop);
    expect(text.indexOf('- orders')).toBeLessThan(text.indexOf('- customers'));
    expect(text.indexOf('- customers')).toBeLessThan(text.indexOf('- audit_log'));
  });

  it('is the same text for the same schema in any table order', () => {
    const reversed = { tables: [...shop.tables].reverse() };
    expect(deterministicSummary(conn, reversed)).toBe(deterministicSummary(conn, shop));
  });

  it('stays bounded for a 300-table schema and names the tables it does not detail', () => {
    const many: SchemaSnapshot = {
      tables: Array.from({ length: 300 }, (_, i) =>
        table(`t${String(i).padStart(3, '0')}`, 1000 - i, {
          columns: Array.from({ length: 40 }, (_, c) => ({
            name: `col_${c}`,
            type: 'varchar(255)',
            nullable: true,
            primaryKey: false,
          })),
        }),
      ),
    };
    const text = deterministicSummary(conn, many);
    expect(text.length).toBeLessThan(100_000);
    expect(text).toContain('…and 150 more: t150, t151');
    expect(text).toContain('+28 more');
  });

  it('handles an empty database', () => {
    expect(deterministicSummary(conn, { tables: [] })).toBe(
      'Shop is a POSTGRES database (shop) with no tables.',
    );
  });

  it('summarizeSchema returns the deterministic text when no model path is plugged in', async () => {
    const ctx = {
      orgId: 'o',
      userId: 'u',
      keyId: 'k',
      role: 'admin' as const,
      scopes: ['*'],
      connectionIds: [],
    };
    expect(await summarizeSchema(ctx, conn, shop)).toBe(deterministicSummary(conn, shop));
  });
});
