import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeAnnotation } from '../../shared/connections/annotations';
import { startTestServer, type TestServer } from '../support/server';

describe('annotations: CRUD, upsert on table + column, table filter, pagination', () => {
  let s: TestServer;
  let conn: string;
  beforeAll(async () => {
    s = await startTestServer();
    const r = await s.call('POST', '/connections', {
      body: { name: 'Annotated', type: 'SQLITE', database: 'annotated.sqlite' },
    });
    conn = r.body.data.id;
  });
  afterAll(() => s.stop());

  const path = () => `/connections/${conn}/annotations`;

  it('creates a table and a column annotation (201) and reads them back by id', async () => {
    const t = await s.call('POST', path(), {
      body: { tableName: 'orders', annotation: 'One row per order' },
    });
    expect(t.status).toBe(201);
    expect(t.body.data).toEqual({
      id: expect.any(String),
      connectionId: conn,
      tableName: 'orders',
      columnName: null,
      annotation: 'One row per order',
      dataType: null,
      examples: null,
      source: 'user',
      sampleValues: true,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    const c = await s.call('POST', path(), {
      body: {
        tableName: 'orders',
        columnName: 'status',
        annotation: 'Order state',
        dataType: 'text',
        examples: 'paid, refunded',
      },
    });
    expect(c.status).toBe(201);
    const g = await s.call('GET', `${path()}/${c.body.data.id}`);
    expect(g.status).toBe(200);
    expect(g.body.data).toEqual(c.body.data);
  });

  it('upserts on the pair tableName + columnName: same id, new text, omitted fields kept', async () => {
    const first = await s.call('POST', path(), {
      body: { tableName: 'customers', columnName: 'email', annotation: 'v1', dataType: 'text' },
    });
    const again = await s.call('POST', path(), {
      body: { tableName: 'customers', columnName: 'email', annotation: 'v2' },
    });
    expect(again.status).toBe(201);
    expect(again.body.data.id).toBe(first.body.data.id);
    expect(again.body.data.annotation).toBe('v2');
    expect(again.body.data.dataType).toBe('text');
    expect(again.body.data.createdAt).toBe(first.body.data.createdAt);
    const cleared = await s.call('POST', path(), {
      body: { tableName: 'customers', columnName: 'email', annotation: 'v3', dataType: null },
    });
    expect(cleared.body.data.dataType).toBeNull();
    const list = await s.call('GET', `${path()}?table=customers`);
    expect(list.body.data).toHaveLength(1);
  });

  it('filters by table exactly and keeps names with # and / distinct', async () => {
    await s.call('POST', path(), { body: { tableName: 'a#b', annotation: 'hash table' } });
    await s.call('POST', path(), { body: { tableName: 'a', columnName: 'b', annotation: 'column b of a' } });
    await s.call('POST', path(), { body: { tableName: 'sales/2024', annotation: 'slash' } });
    const ab = await s.call('GET', `${path()}?table=${encodeURIComponent('a#b')}`);
    expect(ab.body.data.map((x: { annotation: string }) => x.annotation)).toEqual(['hash table']);
    const a = await s.call('GET', `${path()}?table=a`);
    expect(a.body.data.map((x: { annotation: string }) => x.annotation)).toEqual(['column b of a']);
    const none = await s.call('GET', `${path()}?table=nothing`);
    expect(none.body.data).toEqual([]);
    expect(none.body.meta.pagination.total).toBe(0);
  });

  it('paginates in table then column order', async () => {
    for (let i = 0; i < 7; i++)
      await s.call('POST', path(), {
        body: { tableName: 'paged', columnName: `c${i}`, annotation: `column ${i}` },
      });
    const p1 = await s.call('GET', `${path()}?table=paged&pageSize=3`);
    expect(p1.body.meta.pagination).toEqual({ total: 7, page: 1, pageSize: 3, totalPages: 3 });
    expect(p1.body.data.map((x: { columnName: string }) => x.columnName)).toEqual(['c0', 'c1', 'c2']);
    const p3 = await s.call('GET', `${path()}?table=paged&pageSize=3&page=3`);
    expect(p3.body.data.map((x: { columnName: string }) => x.columnName)).toEqual(['c6']);
    const p9 = await s.call('GET', `${path()}?table=paged&pageSize=3&page=9`);
    expect(p9.body.data).toEqual([]);
    expect(p9.body.meta.pagination.total).toBe(7);
  });

  it('updates with PATCH (making it a user annotation) and validates the body', async () => {
    const c = await s.call('POST', path(), {
      body: { tableName: 'inv', columnName: 'total', annotation: 'sum' },
    });
    const id = c.body.data.id;
    const p = await s.call('PATCH', `${path()}/${id}`, {
      body: { examples: '10.00, 12.50', dataType: 'numeric' },
    });
    expect(p.status).toBe(200);
    expect(p.body.data).toMatchObject({ annotation: 'sum', examples: '10.00, 12.50', dataType: 'numeric' });
    expect((await s.call('PATCH', `${path()}/${id}`, { body: {} })).status).toBe(400);
    expect((await s.call('PATCH', `${path()}/${id}`, { body: { annotation: '' } })).status).toBe(400);
    expect((await s.call('PATCH', `${path()}/nope`, { body: { annotation: 'x' } })).status).toBe(404);
  });

  it('deletes (200 {deleted}) and then 404s', async () => {
    const c = await s.call('POST', path(), { body: { tableName: 'gone', annotation: 'bye' } });
    const id = c.body.data.id;
    const d = await s.call('DELETE', `${path()}/${id}`);
    expect(d.body.data).toEqual({ deleted: true });
    expect((await s.call('GET', `${path()}/${id}`)).status).toBe(404);
    expect((await s.call('DELETE', `${path()}/${id}`)).status).toBe(404);
    const again = await s.call('POST', path(), { body: { tableName: 'gone', annotation: 'back' } });
    expect(again.body.data.id).not.toBe(id);
  });

  it('rejects bad bodies with 400 and unknown connections with 404', async () => {
    expect((await s.call('POST', path(), { body: { annotation: 'no table' } })).status).toBe(400);
    expect((await s.call('POST', path(), { body: { tableName: 't' } })).status).toBe(400);
    expect(
      (await s.call('POST', path(), { body: { tableName: 't', annotation: 'x'.repeat(10_001) } })).status,
    ).toBe(400);
    expect(
      (
        await s.call('POST', '/connections/missing/annotations', {
          body: { tableName: 't', annotation: 'x' },
        })
      ).status,
    ).toBe(404);
    expect((await s.call('GET', `/connections/${conn}/annotations/whatever`)).status).toBe(404);
  });

  it('automatic writes never overwrite an annotation a user wrote, but refresh their own', async () => {
    const user = await s.call('POST', path(), {
      body: { tableName: 'keep', columnName: 'x', annotation: 'written by hand' },
    });
    const kept = await writeAnnotation(
      s.app.orgId,
      conn,
      { tableName: 'keep', columnName: 'x', annotation: 'machine text' },
      'auto',
    );
    expect(kept.outcome).toBe('kept');
    expect((await s.call('GET', `${path()}/${user.body.data.id}`)).body.data.annotation).toBe(
      'written by hand',
    );
    const auto1 = await writeAnnotation(
      s.app.orgId,
      conn,
      { tableName: 'keep', columnName: 'y', annotation: 'auto v1' },
      'auto',
    );
    expect(auto1.outcome).toBe('created');
    const auto2 = await writeAnnotation(
      s.app.orgId,
      conn,
      { tableName: 'keep', columnName: 'y', annotation: 'auto v2' },
      'auto',
    );
    expect(auto2.outcome).toBe('updated');
    expect(auto2.annotation.id).toBe(auto1.annotation.id);
    // A user's edit turns it into theirs; automatic annotation leaves it alone from then on.
    await s.call('PATCH', `${path()}/${auto1.annotation.id}`, { body: { annotation: 'now mine' } });
    const after = await writeAnnotation(
      s.app.orgId,
      conn,
      { tableName: 'keep', columnName: 'y', annotation: 'auto v3' },
      'auto',
    );
    expect(after.outcome).toBe('kept');
    expect(after.annotation.annotation).toBe('now mine');
  });
});
