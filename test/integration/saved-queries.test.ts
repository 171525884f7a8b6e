import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createOrganization } from '../../shared/auth/bootstrap';
import { db } from '../../shared/platform/db/store';
import { openTestDatabases, type TestDatabases } from '../support/connections';
import { startTestServer, type TestServer } from '../support/server';

const suffix = randomBytes(4).toString('hex');
const T = `sq_items_${suffix}`;

/**
 * Seven rows; with the standard parameters below each of rows 2–7 fails exactly one condition (name,
 * integer, number, boolean, date, date-time), so only row 1 matches when every type binds correctly.
 */
const ROWS: Array<[number, string, number, number, boolean, string, string]> = [
  [1, 'widget', 5, 9.5, true, '2024-03-01', '2024-03-01 10:00:00'],
  [2, 'gadget', 5, 9.5, true, '2024-03-01', '2024-03-01 10:00:00'],
  [3, 'widget', 1, 9.5, true, '2024-03-01', '2024-03-01 10:00:00'],
  [4, 'widget', 5, 20, true, '2024-03-01', '2024-03-01 10:00:00'],
  [5, 'widget', 5, 9.5, false, '2024-03-01', '2024-03-01 10:00:00'],
  [6, 'widget', 5, 9.5, true, '2024-03-02', '2024-03-01 10:00:00'],
  [7, 'widget', 5, 9.5, true, '2024-03-01', '2024-03-01 12:30:00'],
];

const QUERY = `SELECT id, '{{name}}' AS literal -- {{name}} in a comment is text
FROM ${T}
WHERE name = {{name}} AND {{name}} = name
  AND qty >= {{minQty}} AND price < {{maxPrice}} AND active = {{active}}
  AND day = {{day}} AND sold_at < {{before}}
ORDER BY id`;

const PARAMETERS = [
  { name: 'name', type: 'string', required: true },
  { name: 'minQty', type: 'integer', required: true },
  { name: 'maxPrice', type: 'number', required: false, default: 10.25 },
  { name: 'active', type: 'boolean', required: false, default: true },
  { name: 'day', type: 'date', required: true },
  { name: 'before', type: 'datetime', required: true },
];

const PARAMS = { name: 'widget', minQty: 3, day: '2024-03-01', before: '2024-03-01T13:00:00+01:00' };
const INJECTIONS = [`'; DROP TABLE ${T}; --`, `widget' OR '1'='1`, `widget"; DELETE FROM ${T}; --`];

describe('saved queries over HTTP with real databases', () => {
  let s: TestServer;
  let dbs: TestDatabases;
  let conn: Record<string, string>;
  const mariaInfo = inject('mariadb');

  beforeAll(async () => {
    s = await startTestServer();
    dbs = await openTestDatabases(inject('postgres'), mariaInfo, 'items.sqlite');
    await dbs.pg.query(
      `CREATE TABLE ${T} (id int PRIMARY KEY, name text, qty int, price numeric, active boolean, day date, sold_at timestamptz)`,
    );
    for (const r of ROWS)
      await dbs.pg.query(`INSERT INTO ${T} VALUES ($1, $2, $3, $4, $5, $6, $7)`, [
        ...r.slice(0, 6),
        `${r[6]}Z`,
      ]);

    if (dbs.maria) {
      await dbs.maria.query(
        `CREATE TABLE ${T} (id INT PRIMARY KEY, name VARCHAR(50), qty INT, price DECIMAL(10,2), active BOOLEAN, day DATE, sold_at DATETIME)`,
      );
      for (const r of ROWS) await dbs.maria.query(`INSERT INTO ${T} VALUES (?, ?, ?, ?, ?, ?, ?)`, r);
    }

    dbs.sqlite.exec(
      `CREATE TABLE ${T} (id INTEGER PRIMARY KEY, name TEXT, qty INTEGER, price REAL, active INTEGER, day TEXT, sold_at TEXT)`,
    );
    const ins = dbs.sqlite.prepare(`INSERT INTO ${T} VALUES (?, ?, ?, ?, ?, ?, ?)`);
    for (const r of ROWS) ins.run(r[0], r[1], r[2], r[3], r[4] ? 1 : 0, r[5], r[6]);

    conn = await dbs.connect(s);
  });

  afterAll(async () => {
    await s?.stop();
    await dbs?.close(T);
  });

  let n = 0;
  const save = async (over: Record<string, unknown> = {}, key?: string) => {
    const r = await s.call('POST', '/saved-queries', {
      key,
      body: {
        name: `q-${++n}-${suffix}`,
        query: QUERY,
        connectionId: conn.POSTGRES,
        parameters: PARAMETERS,
        ...over,
      },
    });
    return r;
  };
  const saved = async (over: Record<string, unknown> = {}) => {
    const r = await save(over);
    expect(r.status, r.text).toBe(201);
    return r.body.data;
  };
  const run = (id: string, params: Record<string, unknown>, key?: string) =>
    s.call('POST', `/saved-queries/${id}/run`, { key, body: { params } });

  /** Rows of the table read straight from each database, to prove nothing changed. */
  const tableRows = (type: string) => dbs.query(type, `SELECT id, name FROM ${T} ORDER BY id`);
  const original = ROWS.map((r) => ({ id: r[0], name: r[1] }));

  it('creates a saved query with defaults and returns parameters as a JSON string', async () => {
    const q = await saved({ description: 'Filtered items', tags: ['ops', 'daily'] });
    expect(q).toEqual({
      id: expect.any(String),
      orgId: s.app.orgId,
      connectionId: conn.POSTGRES,
      name: expect.stringMatching(/^q-/),
      description: 'Filtered items',
      query: QUERY,
      parameters: expect.any(String),
      tags: 'ops,daily',
      isPublic: true,
      createdBy: s.app.adminUserId,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    expect(JSON.parse(q.parameters)).toEqual(PARAMETERS);
    expect((await s.call('GET', `/saved-queries/${q.id}`)).body.data).toEqual(q);
  });

  it('records a run in query history as written: the {{placeholders}}, not the bound $n or the values', async () => {
    const q = await saved();
    const r = await run(q.id, PARAMS);
    expect(r.status, r.text).toBe(200);
    const history = await s.call('GET', `/connections/${conn.POSTGRES}/queries?pageSize=1`);
    expect(history.body.data[0]).toMatchObject({ source: 'saved_query', sql: QUERY, status: 'SUCCESS' });
    // A run the API refuses before executing (a wrong type) takes no number; one that fails is recorded as written too.
    const bad = await saved({
      query: `SELECT 1 / ({{minQty}} - {{minQty}}) AS boom FROM ${T}`,
      parameters: [{ name: 'minQty', type: 'integer', required: true }],
    });
    expect((await run(bad.id, { minQty: 2 })).status).toBe(422);
    const failed = await s.call('GET', `/connections/${conn.POSTGRES}/queries?pageSize=1`);
    expect(failed.body.data[0]).toMatchObject({ sql: bad.query, status: 'FAILED' });
  });

  it('binds PostgreSQL placeholders with :: casts (the guard reads them with the server grammar)', async () => {
    const q = await saved({
      query: `SELECT count(*)::int AS n, {{since}}::date AS since FROM ${T} WHERE id >= {{min}}::int`,
      parameters: [
        { name: 'since', type: 'date', required: true },
        { name: 'min', type: 'number', required: false, default: 1 },
      ],
    });
    const r = await run(q.id, { since: '2024-05-01' });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.rows[0].since).toMatch(/^2024-05-01/);
    expect(r.body.data.rows[0].n).toBe(ROWS.length);
  });

  it('accepts parameters given as a JSON string', async () => {
    const q = await saved({ parameters: JSON.stringify(PARAMETERS) });
    expect(JSON.parse(q.parameters)).toEqual(PARAMETERS);
  });

  for (const type of ['POSTGRES', 'MARIADB', 'SQLITE'])
    describe(`on ${type}`, () => {
      const skip = type === 'MARIADB' && !mariaInfo;

      it.skipIf(skip)(
        'binds every parameter type (string, integer, number, boolean, date, datetime)',
        async () => {
          const q = await saved({ connectionId: conn[type] });
          const r = await run(q.id, PARAMS);
          expect(r.status, r.text).toBe(200);
          expect(r.body.data.rows.map((x: any) => Number(x.id))).toEqual([1]);
          expect(r.body.data.rows[0].literal).toBe('{{name}}');
          expect(r.body.data.columns).toEqual(['id', 'literal']);
          // each condition is live: relaxing one parameter lets exactly its row in
          const relaxed: Array<[Record<string, unknown>, number]> = [
            [{ name: 'gadget' }, 2],
            [{ minQty: 1 }, 3],
            [{ maxPrice: 25 }, 4],
            [{ active: false }, 5],
            [{ day: '2024-03-02' }, 6],
            [{ before: '2024-03-01T12:45:00Z' }, 7],
          ];
          for (const [change, row] of relaxed) {
            const rr = await run(q.id, { ...PARAMS, ...change });
            expect(rr.status, rr.text).toBe(200);
            const ids = rr.body.data.rows.map((x: any) => Number(x.id));
            expect(ids, JSON.stringify(change)).toContain(row);
          }
        },
      );

      it.skipIf(skip)(
        'keeps SQL in parameter values as values: the table and its rows are unchanged',
        async () => {
          const q = await saved({ connectionId: conn[type] });
          for (const evil of INJECTIONS) {
            const r = await run(q.id, { ...PARAMS, name: evil });
            expect(r.status, r.text).toBe(200);
            expect(r.body.data.rows).toEqual([]);
          }
          expect(await tableRows(type)).toEqual(original);
        },
      );

      it.skipIf(skip)('refuses write statements at save time with READ_ONLY_VIOLATION', async () => {
        const r = await save({
          connectionId: conn[type],
          query: `DELETE FROM ${T} WHERE id = {{id}}`,
          parameters: [{ name: 'id', type: 'integer', required: true }],
        });
        expect(r.status, r.text).toBe(400);
        expect(r.body.error.code).toBe('READ_ONLY_VIOLATION');
        expect(await tableRows(type)).toEqual(original);
      });
    });

  it('reuses a PostgreSQL parameter number for a repeated name; the server infers types from context', async () => {
    const q = await saved({
      query: 'SELECT {{n}} * 2 AS doubled, {{n}} AS again, CAST({{d}} AS date) + 1 AS next_day',
      parameters: [
        { name: 'n', type: 'integer', required: true },
        { name: 'd', type: 'date', required: true },
      ],
    });
    const r = await run(q.id, { n: 21, d: '2024-02-28' });
    expect(r.status, r.text).toBe(200);
    expect(Number(r.body.data.rows[0].doubled)).toBe(42);
    expect(Number(r.body.data.rows[0].again)).toBe(21);
    expect(String(r.body.data.rows[0].next_day)).toMatch(/^2024-02-29/);
  });

  it('rejects missing required, unknown and wrongly typed parameters with 400 and paths', async () => {
    const q = await saved();
    const r = await run(q.id, { ...PARAMS, name: undefined, minQty: '3', extra: 1, day: '2024-02-30' });
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('VALIDATION_ERROR');
    const paths = r.body.error.details.issues.map((i: any) => i.path).sort();
    expect(paths).toEqual(['body.params.day', 'body.params.extra', 'body.params.minQty', 'body.params.name']);
    const types = await run(q.id, { ...PARAMS, active: 'yes', before: 'noon', maxPrice: '1' });
    expect(types.body.error.details.issues.map((i: any) => i.path).sort()).toEqual([
      'body.params.active',
      'body.params.before',
      'body.params.maxPrice',
    ]);
  });

  it('rejects at save time a placeholder without a definition and a definition without a placeholder', async () => {
    const a = await save({
      query: `SELECT id FROM ${T} WHERE name = {{name}} AND qty = {{qty}}`,
      parameters: [PARAMETERS[0]],
    });
    expect(a.status).toBe(400);
    expect(a.body.error.details.issues).toEqual([
      expect.objectContaining({ path: 'body.query', message: expect.stringContaining('{{qty}}') }),
    ]);
    const b = await save({
      query: `SELECT id FROM ${T} WHERE name = {{name}}`,
      parameters: PARAMETERS.slice(0, 2),
    });
    expect(b.status).toBe(400);
    expect(b.body.error.details.issues[0].path).toBe('body.parameters.1.name');
    // a placeholder inside a string literal needs no definition
    expect((await save({ query: `SELECT '{{x}}' AS x FROM ${T}`, parameters: [] })).status).toBe(201);
  });

  it('validates the body with field paths', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ name: '' }, 'body.name'],
      [{ query: '' }, 'body.query'],
      [{ connectionId: undefined }, 'body.connectionId'],
      [{ parameters: 'not json' }, 'body.parameters'],
      [{ parameters: [{ name: 'name', type: 'text' }] }, 'body.parameters.0.type'],
      [{ parameters: [{ name: '1bad', type: 'string' }] }, 'body.parameters.0.name'],
      [
        { parameters: [{ ...PARAMETERS[0], default: 5 }, ...PARAMETERS.slice(1)] },
        'body.parameters.0.default',
      ],
      [{ isPublic: 'yes' }, 'body.isPublic'],
      [{ query: 'SELECT $1' }, 'body.query'],
    ];
    for (const [over, path] of cases) {
      const r = await save(over);
      expect(r.status, JSON.stringify(over)).toBe(400);
      expect(
        r.body.error.details.issues.map((i: any) => i.path),
        JSON.stringify(over),
      ).toContain(path);
    }
    const badConn = await save({ connectionId: 'no-such-connection' });
    expect(badConn.status).toBe(404);
    expect(badConn.body.error.details.path).toBe('body.connectionId');
  });

  it('keeps names unique per organization (case-insensitive), across renames and deletes', async () => {
    const a = await saved({ name: `Revenue ${suffix}` });
    const dup = await save({ name: `  revenue ${suffix.toUpperCase()} ` });
    expect(dup.status).toBe(409);
    expect(dup.body.error.code).toBe('ALREADY_EXISTS');
    const b = await saved({ name: `Costs ${suffix}` });
    const clash = await s.call('PATCH', `/saved-queries/${b.id}`, { body: { name: `REVENUE ${suffix}` } });
    expect(clash.status).toBe(409);
    // rename a away; its old name becomes free, the new one taken
    const renamed = await s.call('PATCH', `/saved-queries/${a.id}`, { body: { name: `Income ${suffix}` } });
    expect(renamed.status, renamed.text).toBe(200);
    expect(renamed.body.data.name).toBe(`Income ${suffix}`);
    expect((await save({ name: `Income ${suffix}` })).status).toBe(409);
    const reuse = await saved({ name: `Revenue ${suffix}` });
    // a case-only rename keeps the name
    expect(
      (await s.call('PATCH', `/saved-queries/${reuse.id}`, { body: { name: `REVENUE ${suffix}` } })).status,
    ).toBe(200);
    expect((await s.call('DELETE', `/saved-queries/${b.id}`)).body.data).toEqual({ deleted: true });
    expect((await s.call('GET', `/saved-queries/${b.id}`)).status).toBe(404);
    expect((await s.call('DELETE', `/saved-queries/${b.id}`)).status).toBe(404);
    expect((await save({ name: `Costs ${suffix}` })).status).toBe(201);
  });

  it('gives exactly one of several concurrent creates with the same name', async () => {
    const name = `race ${suffix}`;
    const answers = await Promise.all([1, 2, 3, 4].map(() => save({ name })));
    expect(answers.map((a) => a.status).sort()).toEqual([201, 409, 409, 409]);
  });

  it('reclaims a name guard left behind by an interrupted write, but never a live one', async () => {
    const name = `stale ${suffix}`;
    await db.put({
      pk: `ORG#${s.app.orgId}`,
      sk: `SQNAME#${name}`,
      ownerId: 'gone-saved-query',
      name,
      claimedAt: Date.now() - 10 * 60_000,
    });
    expect((await save({ name })).status).toBe(201);
    expect((await save({ name })).status).toBe(409);
    // a guard claimed moments ago counts as held even before its owner item exists
    const fresh = `fresh ${suffix}`;
    await db.put({
      pk: `ORG#${s.app.orgId}`,
      sk: `SQNAME#${fresh}`,
      ownerId: 'in-flight',
      name: fresh,
      claimedAt: Date.now(),
    });
    expect((await save({ name: fresh })).status).toBe(409);
  });

  it('updates the query with re-validation and runs the new version', async () => {
    const q = await saved();
    const bad = await s.call('PATCH', `/saved-queries/${q.id}`, {
      body: { query: `SELECT id FROM ${T} WHERE id = {{id}}` },
    });
    expect(bad.status).toBe(400);
    const write = await s.call('PATCH', `/saved-queries/${q.id}`, {
      body: {
        query: `UPDATE ${T} SET name = 'x' WHERE id = {{id}}`,
        parameters: [{ name: 'id', type: 'integer', required: true }],
      },
    });
    expect(write.status).toBe(400);
    expect(write.body.error.code).toBe('READ_ONLY_VIOLATION');
    const ok = await s.call('PATCH', `/saved-queries/${q.id}`, {
      body: {
        query: `SELECT name FROM ${T} WHERE id = {{id}}`,
        parameters: '[{"name":"id","type":"integer","required":true}]',
        tags: 'finance',
      },
    });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.data.tags).toBe('finance');
    const r = await run(q.id, { id: 2 });
    expect(r.body.data.rows).toEqual([{ name: 'gadget' }]);
  });

  it('lists with pagination and filters by connectionId and tags substring', async () => {
    const tag = `tag${suffix}`;
    await saved({ tags: `alpha,${tag}-x`, connectionId: conn.SQLITE });
    await saved({ tags: `${tag}-y`, connectionId: conn.POSTGRES });
    await saved({ tags: 'other', connectionId: conn.SQLITE });
    const byTag = await s.call('GET', `/saved-queries?tags=${tag.toUpperCase()}`);
    expect(byTag.body.data).toHaveLength(2);
    const both = await s.call('GET', `/saved-queries?tags=${tag}&connectionId=${conn.SQLITE}`);
    expect(both.body.data.map((x: any) => x.tags)).toEqual([`alpha,${tag}-x`]);
    const page = await s.call('GET', '/saved-queries?page=2&pageSize=2');
    expect(page.status).toBe(200);
    expect(page.body.data).toHaveLength(2);
    expect(page.body.meta.pagination).toMatchObject({ page: 2, pageSize: 2 });
    expect(page.body.meta.pagination.total).toBeGreaterThanOrEqual(5);
    expect((await s.call('GET', '/saved-queries?pageSize=101')).status).toBe(400);
  });

  it('binds an absent optional parameter as NULL and uses a default when one is defined', async () => {
    const q = await saved({
      query: `SELECT id FROM ${T} WHERE (CAST({{q}} AS text) IS NULL OR name = {{q}}) AND qty >= {{min}} ORDER BY id`,
      parameters: [
        { name: 'q', type: 'string' },
        { name: 'min', type: 'integer', required: true, default: 5 },
      ],
    });
    const all = await run(q.id, {});
    expect(all.status, all.text).toBe(200);
    expect(all.body.data.rows.map((x: any) => x.id)).toEqual([1, 2, 4, 5, 6, 7]);
    const some = await run(q.id, { q: 'gadget', min: 0 });
    expect(some.body.data.rows).toEqual([{ id: 2 }]);
  });

  it("isolates organizations: another organization's saved queries are 404 on every route", async () => {
    const q = await saved({ name: `shared-name-${suffix}` });
    const other = await createOrganization({ name: 'Other SQ', adminEmail: `sq-${suffix}@other.example` });
    const key = other.key;
    expect((await s.call('GET', `/saved-queries/${q.id}`, { key })).status).toBe(404);
    expect((await s.call('PATCH', `/saved-queries/${q.id}`, { key, body: { name: 'x' } })).status).toBe(404);
    expect((await s.call('DELETE', `/saved-queries/${q.id}`, { key })).status).toBe(404);
    expect((await run(q.id, PARAMS, key)).status).toBe(404);
    expect((await s.call('GET', '/saved-queries', { key })).body.data).toEqual([]);
    // another organization cannot point at this organization's connection, but may reuse the name
    const foreign = await save({ name: `shared-name-${suffix}` }, key);
    expect(foreign.status).toBe(404);
    expect(foreign.body.error.details.path).toBe('body.connectionId');
    expect((await s.call('GET', `/saved-queries/${q.id}`)).status).toBe(200);
  });

  it('hides private saved queries from other members and lets only creator or admin change shared ones', async () => {
    const m = await s.call('POST', '/members', {
      body: { email: `sq-member-${suffix}@example.com`, name: 'Member', connectionIds: [conn.SQLITE] },
    });
    const key = (
      await s.call('POST', `/members/${m.body.data.id}/keys`, { body: { name: 'm', scopes: ['query'] } })
    ).body.data.key as string;
    const priv = await saved({ isPublic: false });
    const pub = await saved({ connectionId: conn.SQLITE });
    expect((await s.call('GET', `/saved-queries/${priv.id}`, { key })).status).toBe(404);
    expect((await s.call('GET', `/saved-queries/${pub.id}`, { key })).status).toBe(200);
    expect(
      (await s.call('PATCH', `/saved-queries/${pub.id}`, { key, body: { name: `m-${suffix}` } })).status,
    ).toBe(403);
    expect((await s.call('DELETE', `/saved-queries/${pub.id}`, { key })).status).toBe(403);
    // one on a connection the member is not assigned to is hidden like the connection: 404, no SQL text
    const other = await saved({ connectionId: conn.POSTGRES });
    const read = await s.call('GET', `/saved-queries/${other.id}`, { key });
    expect(read.status).toBe(404);
    expect(read.text).not.toContain(other.query);
    const listed = await s.call('GET', '/saved-queries?pageSize=100', { key });
    expect(listed.body.data.map((x: { id: string }) => x.id)).not.toContain(other.id);
    expect(listed.body.data.map((x: { id: string }) => x.id)).toContain(pub.id);
    expect((await s.call('PATCH', `/saved-queries/${other.id}`, { key, body: { name: 'x' } })).status).toBe(
      404,
    );
    expect((await s.call('DELETE', `/saved-queries/${other.id}`, { key })).status).toBe(404);
    expect((await run(other.id, PARAMS, key)).status).toBe(404);
    // nor save one on such a connection; on its own connection it can, and manage it
    expect((await save({ connectionId: conn.POSTGRES }, key)).status).toBe(404);
    const own = await save({ connectionId: conn.SQLITE, isPublic: false }, key);
    expect(own.status, own.text).toBe(201);
    expect((await run(own.body.data.id, PARAMS, key)).body.data.rows).toEqual([
      { id: 1, literal: '{{name}}' },
    ]);
    expect((await s.call('GET', `/saved-queries/${own.body.data.id}`)).status).toBe(200);
    expect((await s.call('DELETE', `/saved-queries/${own.body.data.id}`, { key })).status).toBe(200);
    const wrongScope = (
      await s.call('POST', '/keys', { body: { name: 'dash only', scopes: ['dashboards'] } })
    ).body.data.key;
    expect((await s.call('GET', '/saved-queries', { key: wrongScope })).status).toBe(403);
  });
});
