import { describe, expect, it } from 'vitest';
import { deterministicAnnotator, sampleQuery } from '../../shared/connections/auto-annotate';
import type { TableInfo } from '../../shared/databases/drivers/types';

const users: TableInfo = {
  name: 'sales.users',
  schema: 'sales',
  kind: 'table',
  columns: [
    { name: 'id', type: 'integer', nullable: false, primaryKey: true },
    { name: 'email', type: 'text', nullable: false, primaryKey: false },
    { name: 'password_hash', type: 'text', nullable: false, primaryKey: false },
    { name: 'team_id', type: 'integer', nullable: true, primaryKey: false },
    { name: 'signed_up', type: 'text', nullable: true, primaryKey: false },
  ],
  primaryKey: ['id'],
  foreignKeys: [{ columns: ['team_id'], referencedTable: 'sales.teams', referencedColumns: ['id'] }],
  rowEstimate: 1234,
};
const audits: TableInfo = {
  name: 'audits',
  kind: 'table',
  columns: [{ name: 'user_id', type: 'integer', nullable: false, primaryKey: false }],
  primaryKey: [],
  foreignKeys: [{ columns: ['user_id'], referencedTable: 'sales.users', referencedColumns: ['id'] }],
  rowEstimate: null,
};
const schema = { tables: [users, audits] };

describe('automatic annotation: sample queries and the deterministic annotator', () => {
  it('builds a bounded sample query per dialect with quoted, schema-qualified names', () => {
    expect(sampleQuery('POSTGRES', users)).toBe('SELECT * FROM "sales"."users" LIMIT 50');
    expect(sampleQuery('MYSQL', { ...users, name: 'we`ird', schema: undefined })).toBe(
      'SELECT * FROM `we``ird` LIMIT 50',
    );
    expect(sampleQuery('MSSQL', users)).toBe('SELECT TOP 50 * FROM [sales].[users]');
    expect(sampleQuery('SQLITE', { ...users, name: 'a"b', schema: undefined })).toBe(
      'SELECT * FROM "a""b" LIMIT 50',
    );
    expect(JSON.parse(sampleQuery('MONGODB', { ...users, name: 'events', schema: undefined }))).toEqual({
      collection: 'events',
      filter: {},
      limit: 50,
    });
  });

  it('describes the table: size, keys, references in both directions', () => {
    const [table] = deterministicAnnotator(users, schema);
    expect(table).toEqual({
      tableName: 'sales.users',
      columnName: null,
      annotation:
        'Table with 5 columns and about 1,234 rows. Primary key: id. team_id references sales.teams(id). Referenced by audits.user_id.',
      dataType: null,
      examples: null,
    });
    expect(deterministicAnnotator(audits, schema)[0].annotation).toContain('No primary key.');
  });

  it('describes columns from the sample, and withholds values of sensitive columns', () => {
    const rows = [
      { id: 1, email: 'a@x.io', password_hash: 'h1', team_id: 7, signed_up: '2024-01-02' },
      { id: 2, email: 'b@x.io', password_hash: 'h2', team_id: null, signed_up: '2024-02-03T10:00:00Z' },
      { id: 3, email: 'c@x.io', password_hash: 'h3', team_id: 7, signed_up: null },
    ];
    const out = deterministicAnnotator(users, schema, {
      columns: Object.keys(rows[0]),
      rows,
      rowCount: 3,
      executionTime: 1,
    });
    const col = (name: string) => out.find((a) => a.columnName === name)!;
    expect(col('id')).toMatchObject({ dataType: 'integer', examples: '1, 2, 3' });
    expect(col('id').annotation).toBe(
      'integer, not null. Primary key. In a sample of 3 rows: 3 distinct values.',
    );
    expect(col('team_id').annotation).toBe(
      'integer, nullable. References sales.teams.id. In a sample of 3 rows: 1 distinct value, 33% empty.',
    );
    expect(col('team_id').examples).toBe('7');
    expect(col('signed_up').annotation).toContain('Values look like dates or timestamps.');
    for (const secret of ['password_hash', 'email']) {
      expect(col(secret).examples).toBeNull();
      expect(col(secret).annotation).toContain('Example values withheld');
    }
    expect(col('email').annotation).toContain('Values look like email addresses.');
    expect(JSON.stringify(out)).not.toContain('h1');
  });

  it('lists every value seen of a low-cardinality text column, most frequent first', () => {
    const customers: TableInfo = {
      name: 'customers',
      kind: 'table',
      columns: [
        { name: 'CustomerID', type: 'integer', nullable: false, primaryKey: true },
        { name: 'Segment', type: 'text', nullable: true, primaryKey: false },
        { name: 'Currency', type: 'text', nullable: true, primaryKey: false },
        { name: 'Name', type: 'text', nullable: true, primaryKey: false },
        { name: 'Joined', type: 'text', nullable: true, primaryKey: false },
      ],
      primaryKey: ['CustomerID'],
      foreignKeys: [],
      rowEstimate: 32_000,
    };
    const segments = ['SME', 'SME', 'KAM', 'SME', 'LAM', 'KAM', 'SME', 'KAM'];
    const rows = Array.from({ length: 50 }, (_, i) => ({
      CustomerID: i + 1,
      Segment: segments[i % segments.length],
      Currency: i % 10 === 3 ? 'EUR' : 'CZK',
      Name: `Customer ${i + 1}`,
      Joined: `2024-01-${String((i % 28) + 1).padStart(2, '0')}`,
    }));
    const out = deterministicAnnotator(
      customers,
      { tables: [customers] },
      {
        columns: Object.keys(rows[0]),
        rows,
        rowCount: 50,
        executionTime: 1,
        truncated: true,
      },
    );
    const col = (name: string) => out.find((a) => a.columnName === name)!;
    // Beyond the 5 examples of other columns: all values, the rare LAM included.
    expect(col('Segment').examples).toBe('SME, KAM, LAM');
    expect(col('Segment').annotation).toContain('every value seen is listed');
    expect(col('Currency').examples).toBe('CZK, EUR');
    // Many distinct values, dates and numbers: the first few as before, no category claim.
    expect(col('Name').examples).toBe('Customer 1, Customer 2, Customer 3, Customer 4, Customer 5');
    expect(col('Name').annotation).not.toContain('category');
    expect(col('Joined').annotation).not.toContain('category');
    expect(col('CustomerID').annotation).not.toContain('category');
    // A small table seen whole, each value once: not a category either.
    const few = deterministicAnnotator(
      customers,
      { tables: [customers] },
      {
        columns: ['Segment'],
        rows: [{ Segment: 'SME' }, { Segment: 'KAM' }],
        rowCount: 2,
        executionTime: 1,
      },
    );
    expect(few.find((a) => a.columnName === 'Segment')!.annotation).not.toContain('category');
  });

  it('works without a sample (sampling failed) and says when the sample is empty', () => {
    const out = deterministicAnnotator(users, schema);
    expect(out).toHaveLength(6);
    expect(out.every((a) => a.examples === null)).toBe(true);
    const empty = deterministicAnnotator(users, schema, {
      columns: [],
      rows: [],
      rowCount: 0,
      executionTime: 1,
    });
    expect(empty[0].annotation).toContain('The sample found no rows.');
  });
});
