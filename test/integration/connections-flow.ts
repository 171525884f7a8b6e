import { expect, it } from 'vitest';
import { listEvents } from '../../shared/platform/events';
import type { TestServer } from '../support/server';

/**
 * The end-to-end connection flow, run against each real database (connections-<db>.test.ts):
 * create → test (schema cached) → schema → annotate → query + history → re-introspect → auto annotation
 * through the queue → failing test with diagnosis. Secrets are checked on every response text.
 */
export interface FlowDb {
  /** ConnectionCreate body for a working connection (password included). */
  body: Record<string, unknown>;
  /** The password (must never appear in a response). */
  password: string;
  /** A body whose test fails, and the Diagnosis stage expected. */
  failing: { body: Record<string, unknown>; stage: string; password?: string };
  /** Runs DDL/DML as an administrator on the test database. */
  admin(sql: string): Promise<void>;
  /** Statement that lists the seeded customers (dialect quoting). */
  selectCustomers: string;
  /** A writing statement that must be refused. */
  write: string;
  /** A statement the database rejects. */
  broken: string;
  /** How the seeded tables show in the schema. */
  customers: string;
  orders: string;
}

/** The statements and table names of the seeded customers/orders tables, the same in every dialect. */
export const FLOW_STATEMENTS = {
  selectCustomers: 'SELECT id, name FROM customers ORDER BY id',
  write: "UPDATE customers SET name = 'x'",
  broken: 'SELECT no_such_column FROM customers',
  customers: 'customers',
  orders: 'orders',
} satisfies Partial<FlowDb>;

export function connectionFlow(get: () => { s: TestServer; db: FlowDb }) {
  const texts: string[] = [];
  const call = async (method: string, path: string, opts: { body?: unknown; key?: string } = {}) => {
    const r = await get().s.call(method, path, opts);
    texts.push(r.text);
    return r;
  };
  let id = '';

  it('creates the connection and tests it: success, schema introspected and cached with a summary', async () => {
    const { db } = get();
    const c = await call('POST', '/connections', { body: db.body });
    expect(c.status, c.text).toBe(201);
    id = c.body.data.id;
    expect((await call('GET', `/connections/${id}/schema`)).status).toBe(404);
    const t = await call('POST', `/connections/${id}/test`);
    expect(t.status, t.text).toBe(200);
    expect(t.body.data, t.text).toMatchObject({ success: true, schemaIntrospected: true, tableCount: 2 });
    expect(typeof t.body.data.latency).toBe('number');
    expect(t.body.data.message).toMatch(/Connected to/);
    const again = await call('POST', `/connections/${id}/test`);
    expect(again.body.data.schemaIntrospected).toBe(false);
    expect(again.body.data.tableCount).toBeUndefined();
    const g = await call('GET', `/connections/${id}`);
    expect(g.body.data.lastTestedAt).not.toBeNull();
    expect(g.body.data.schemaUpdatedAt).not.toBeNull();
    expect(g.body.data.isActive).toBe(true);
  });

  it('serves the cached schema with tables, columns, keys and the summary', async () => {
    const { db } = get();
    const r = await call('GET', `/connections/${id}/schema`);
    expect(r.status).toBe(200);
    const names = r.body.data.schema.tables.map((t: { name: string }) => t.name).sort();
    expect(names).toEqual([db.customers, db.orders].sort());
    const orders = r.body.data.schema.tables.find((t: { name: string }) => t.name === db.orders);
    expect(orders.primaryKey).toEqual(['id']);
    expect(orders.foreignKeys[0]).toMatchObject({ columns: ['customer_id'], referencedColumns: ['id'] });
    expect(orders.columns.map((c: { name: string }) => c.name)).toEqual([
      'id',
      'customer_id',
      'total',
      'status',
    ]);
    expect(r.body.data.schemaSummary).toContain(db.orders);
    expect(r.body.data.schemaSummary).toContain('customer_id →');
    expect(r.body.data.schemaUpdatedAt).toEqual(expect.any(String));
  });

  it('annotates tables and columns (upsert, filter)', async () => {
    const { db } = get();
    const a = await call('POST', `/connections/${id}/annotations`, {
      body: { tableName: db.orders, columnName: 'status', annotation: 'paid or open' },
    });
    expect(a.status).toBe(201);
    const b = await call('POST', `/connections/${id}/annotations`, {
      body: { tableName: db.orders, columnName: 'status', annotation: 'paid, open or refunded' },
    });
    expect(b.body.data.id).toBe(a.body.data.id);
    const l = await call('GET', `/connections/${id}/annotations?table=${encodeURIComponent(db.orders)}`);
    expect(l.body.data).toHaveLength(1);
    expect(l.body.data[0].annotation).toBe('paid, open or refunded');
  });

  it('runs a read-only query and records it, with its question, in the history', async () => {
    const { db } = get();
    const q = await call('POST', `/connections/${id}/query`, {
      body: { sql: db.selectCustomers, question: 'Who are our customers?' },
    });
    expect(q.status, q.text).toBe(200);
    expect(q.body.data.columns).toEqual(['id', 'name']);
    expect(q.body.data.rows).toEqual([
      { id: 1, name: 'Ada' },
      { id: 2, name: 'Grace' },
      { id: 3, name: 'Linus' },
    ]);
    expect(q.body.data.rowCount).toBe(3);
    const capped = await call('POST', `/connections/${id}/query`, {
      body: { sql: db.selectCustomers, maxRows: 2 },
    });
    expect(capped.body.data).toMatchObject({ rowCount: 2, truncated: true });
    const w = await call('POST', `/connections/${id}/query`, { body: { sql: db.write } });
    expect(w.status).toBe(400);
    expect(w.body.error.code).toBe('READ_ONLY_VIOLATION');
    const bad = await call('POST', `/connections/${id}/query`, { body: { sql: db.broken } });
    expect(bad.status).toBe(422);
    expect(bad.body.error.code).toBe('QUERY_FAILED');
    expect(
      (await call('POST', `/connections/${id}/query`, { body: { sql: 'x'.repeat(100_001) } })).status,
    ).toBe(400);
    expect(
      (await call('POST', `/connections/${id}/query`, { body: { sql: 'select 1', maxRows: 0 } })).status,
    ).toBe(400);

    const h = await call('GET', `/connections/${id}/queries?pageSize=3`);
    expect(h.status).toBe(200);
    expect(h.body.meta.pagination).toEqual({ total: 4, page: 1, pageSize: 3, totalPages: 2 });
    expect(h.body.data.map((e: { status: string }) => e.status)).toEqual(['FAILED', 'REJECTED', 'SUCCESS']);
    expect(h.body.data[0]).toMatchObject({ errorCode: 'QUERY_FAILED', sql: db.broken, rowCount: null });
    expect(h.body.data[2]).toMatchObject({ rowCount: 2, truncated: true });
    const p2 = await call('GET', `/connections/${id}/queries?pageSize=3&page=2`);
    expect(p2.body.data).toHaveLength(1);
    expect(p2.body.data[0]).toMatchObject({
      status: 'SUCCESS',
      question: 'Who are our customers?',
      sql: db.selectCustomers,
      rowCount: 3,
      source: 'query',
      error: null,
      userId: get().s.app.adminUserId,
    });
    expect(typeof p2.body.data[0].executionTime).toBe('number');
  });

  it('re-introspects on POST /schema and records schema.updated', async () => {
    const { db, s } = get();
    const before = (await call('GET', `/connections/${id}/schema`)).body.data.schemaUpdatedAt;
    await db.admin('CREATE TABLE flow_extra (id INTEGER PRIMARY KEY)');
    const r = await call('POST', `/connections/${id}/schema`);
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.schema.tables).toHaveLength(3);
    expect(r.body.data.schemaUpdatedAt > before).toBe(true);
    const cached = await call('GET', `/connections/${id}/schema`);
    expect(cached.body.data.schema.tables).toHaveLength(3);
    await db.admin('DROP TABLE flow_extra');
    const events = await listEvents(s.app.orgId, { newestFirst: true });
    const updated = events.filter(
      (e) => e.type === 'schema.updated' && (e.data as { connectionId: string }).connectionId === id,
    );
    expect(updated.length).toBeGreaterThanOrEqual(2);
    expect((updated[0].data as { tableCount: number }).tableCount).toBe(3);
    await call('POST', `/connections/${id}/schema`);
  });

  it('queues automatic annotation (412 before a schema, 400 for unknown tables) and the worker writes it', async () => {
    const { db, s } = get();
    const fresh = await call('POST', '/connections', { body: { ...db.body, name: 'no schema yet' } });
    const none = await call('POST', `/connections/${fresh.body.data.id}/annotations/auto`);
    expect(none.status).toBe(412);
    expect(none.body.error.code).toBe('SCHEMA_NOT_INTROSPECTED');
    const unknown = await call('POST', `/connections/${id}/annotations/auto`, { body: { tables: ['nope'] } });
    expect(unknown.status).toBe(400);
    const r = await call('POST', `/connections/${id}/annotations/auto`, { body: { tables: [db.orders] } });
    expect(r.status, r.text).toBe(202);
    expect(r.body.data).toEqual({
      message: expect.any(String),
      connectionId: id,
      tables: [db.orders],
      tableCount: 1,
    });
    const deadline = Date.now() + 45_000;
    let list: any[] = [];
    while (Date.now() < deadline) {
      list = (await s.call('GET', `/connections/${id}/annotations?table=${encodeURIComponent(db.orders)}`))
        .body.data;
      if (list.some((a) => a.source === 'auto' && a.columnName === 'total')) break;
      await new Promise((ok) => setTimeout(ok, 200));
    }
    const table = list.find((a) => a.columnName === null);
    expect(table.source).toBe('auto');
    expect(table.annotation).toContain('Primary key: id.');
    const customer = list.find((a) => a.columnName === 'customer_id');
    expect(customer.annotation).toMatch(/References .*customers\.id\./);
    expect(customer.examples).toBe('1, 2');
    const status = list.find((a) => a.columnName === 'status');
    expect(status.source).toBe('user');
    expect(status.annotation).toBe('paid, open or refunded');
    const all = await call('POST', `/connections/${id}/annotations/auto`);
    expect(all.body.data.tableCount).toBe(2);
  });

  it('a failing test answers 422 CONNECTION_FAILED with a diagnosis and deactivates the connection', async () => {
    const { db } = get();
    const c = await call('POST', '/connections', { body: db.failing.body });
    expect(c.status, c.text).toBe(201);
    const t = await call('POST', `/connections/${c.body.data.id}/test`);
    expect(t.status, t.text).toBe(422);
    expect(t.body.error.code).toBe('CONNECTION_FAILED');
    const d = t.body.error.details.diagnosis;
    expect(d.stage).toBe(db.failing.stage);
    expect(d.fixSteps.length).toBeGreaterThan(0);
    const g = await call('GET', `/connections/${c.body.data.id}`);
    expect(g.body.data.isActive).toBe(false);
    expect(g.body.data.lastError).toEqual(expect.any(String));
    expect(g.body.data.lastErrorDiagnosis.stage).toBe(db.failing.stage);
    const q = await call('POST', `/connections/${c.body.data.id}/query`, {
      body: { sql: db.selectCustomers },
    });
    expect(q.status).toBe(422);
    expect(q.body.error.code).toBe('CONNECTION_INACTIVE');
  });

  it('never returns a password in any response', () => {
    const { db } = get();
    expect(texts.length).toBeGreaterThan(20);
    for (const text of texts) {
      expect(text).not.toContain(db.password);
      if (db.failing.password) expect(text).not.toContain(db.failing.password);
    }
  });

  it('deletes the connection with its annotations, schema and history', async () => {
    const r = await call('DELETE', `/connections/${id}`);
    expect(r.status).toBe(200);
    expect((await call('GET', `/connections/${id}/schema`)).status).toBe(404);
    expect((await call('GET', `/connections/${id}/queries`)).status).toBe(404);
  });
}
