import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { LATEST_PROTOCOL_VERSION, McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from 'vitest';
import { CONSOLE_DIR } from '../../infra/local/console';
import { createOrganization } from '../../shared/auth/bootstrap';
import { mariadbAdmin, openTestDatabases, type TestDatabases } from '../support/connections';
import { completions, type FakeOpenAI, startFakeOpenAI } from '../support/fake-openai';
import { callTool, mcpClient, mcpPost, textOf } from '../support/mcp';
import { startTestServer, type TestServer } from '../support/server';

/**
 * The MCP endpoint with the SDK's own client against the local runtime, on PostgreSQL, MariaDB and
 * SQLite: every tool's answer is compared with the REST answer of the same operation, and every refusal
 * is checked against the database read back.
 */
const suffix = randomBytes(4).toString('hex');
const T = `mcp_items_${suffix}`;
const ROWS = [
  { id: 1, name: 'anvil' },
  { id: 2, name: 'bolt' },
  { id: 3, name: 'crate' },
];
const TOOL_NAMES = [
  'list_connections',
  'search_schema',
  'run_query',
  'ask_question',
  'list_saved_queries',
  'run_saved_query',
  'list_metrics',
  'evaluate_metric',
  'list_dashboards',
  'get_widget_data',
  'submit_for_approval',
];
/** The same result without its timing. */
const untimed = (r: any) => {
  const { executionTime: _, ...rest } = r;
  return rest;
};

describe('MCP endpoint', () => {
  let s: TestServer;
  let fake: FakeOpenAI;
  let dbs: TestDatabases;
  let conn: Record<string, string>;
  let mcp: Client;
  const types = () => Object.keys(conn);

  const rest = async (method: string, path: string, body?: unknown, key?: string) => {
    const r = await s.call(method, path, { body, key });
    expect(r.status, r.text).toBeLessThan(300);
    return r.body;
  };
  const readBack = (type: string) => dbs.query(type, `SELECT id, name FROM ${T} ORDER BY id`);
  const keyWith = async (scopes: string[]) =>
    (await rest('POST', '/keys', { name: `scoped ${scopes.join(',')}`, scopes })).data.key as string;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    s = await startTestServer({
      env: { OPENAI_API_KEY: fake.apiKey, OPENAI_BASE_URL: fake.url, LOUPE_MODEL: 'test-model' },
    });
    dbs = await openTestDatabases(inject('postgres'), inject('mariadb'), `${T}.sqlite`);
    const values = ROWS.map((r) => `(${r.id}, '${r.name}')`).join(', ');
    await dbs.pg.query(`CREATE TABLE ${T} (id int PRIMARY KEY, name varchar(50) NOT NULL)`);
    await dbs.pg.query(`INSERT INTO ${T} VALUES ${values}`);
    await dbs.maria?.query(`CREATE TABLE ${T} (id int PRIMARY KEY, name varchar(50) NOT NULL)`);
    await dbs.maria?.query(`INSERT INTO ${T} VALUES ${values}`);
    dbs.sqlite.exec(
      `CREATE TABLE ${T} (id INTEGER PRIMARY KEY, name TEXT NOT NULL); INSERT INTO ${T} VALUES ${values};`,
    );
    // Functions that write, owned by the database's users: the guard must refuse calling them.
    await dbs.pg.query(
      `CREATE FUNCTION ${T}_bump() RETURNS int LANGUAGE sql VOLATILE AS 'UPDATE ${T} SET name = ''x''; SELECT 1'`,
    );
    const maria = inject('mariadb');
    if (maria)
      await mariadbAdmin(
        maria,
        maria.database,
        `CREATE FUNCTION ${T}_bump() RETURNS INT MODIFIES SQL DATA BEGIN UPDATE ${T} SET name = 'x'; RETURN 1; END`,
      );
    conn = await dbs.connect(s);
    for (const id of Object.values(conn)) {
      fake.script({ content: 'A small test database.' });
      const t = await s.call('POST', `/connections/${id}/test`);
      expect(t.body.data, t.text).toMatchObject({ success: true, schemaIntrospected: true });
    }
    ({ client: mcp } = await mcpClient(s));
  });
  afterAll(async () => {
    await mcp?.close();
    await s?.stop();
    await fake?.stop();
    await dbs?.pg.query(`DROP FUNCTION IF EXISTS ${T}_bump()`);
    const maria = inject('mariadb');
    if (maria) await mariadbAdmin(maria, maria.database, `DROP FUNCTION IF EXISTS ${T}_bump`).catch(() => {});
    await dbs?.close(T);
  });
  beforeEach(() => {
    expect(fake.pending(), 'every scripted turn of the previous test was used').toBe(0);
    fake.reset();
  });

  describe('protocol', () => {
    it('initializes with the latest protocol revision and says what it offers', async () => {
      const { client, transport } = await mcpClient(s);
      expect(transport.protocolVersion).toBe(LATEST_PROTOCOL_VERSION);
      expect(client.getServerVersion()).toMatchObject({ name: 'loupe' });
      expect(client.getServerCapabilities()).toMatchObject({ tools: {}, resources: {} });
      expect(client.getInstructions()).toContain('submit_for_approval');
      await client.close();
    });

    it('negotiates the version: an older supported one is kept, an unknown one gets the latest', async () => {
      const init = (protocolVersion: string) =>
        mcpPost(s, {
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion, capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
        });
      const old = await init('2025-03-26');
      expect(old.status).toBe(200);
      expect(old.json.result.protocolVersion).toBe('2025-03-26');
      const unknown = await init('1999-01-01');
      expect(unknown.json.result.protocolVersion).toBe(LATEST_PROTOCOL_VERSION);
      // Later requests name their version in a header; an unsupported one is refused by the transport.
      const bad = await mcpPost(
        s,
        { jsonrpc: '2.0', id: 2, method: 'tools/list' },
        { headers: { 'mcp-protocol-version': '1999-01-01' } },
      );
      expect(bad.status).toBe(400);
      expect(bad.json.error.message).toMatch(/protocol version/i);
    });

    it('answers protocol errors as JSON-RPC errors: bad JSON, unknown method, unknown tool', async () => {
      const parse = await mcpPost(s, '{"jsonrpc": "2.0", "id": 1, "method": ');
      expect(parse.status).toBe(400);
      expect(parse.json.error.code).toBe(-32700);
      const method = await mcpPost(s, { jsonrpc: '2.0', id: 3, method: 'prompts/list' });
      expect(method.json.error.code).toBe(-32601);
      const err = await mcp.callTool({ name: 'drop_database', arguments: {} }).catch((e) => e);
      expect(err).toBeInstanceOf(McpError);
      expect(err.code).toBe(-32602);
    });

    it("leaves the transport's own checks to the SDK: Accept and Content-Type", async () => {
      const message = { jsonrpc: '2.0', id: 1, method: 'tools/list' };
      expect((await mcpPost(s, message, { headers: { accept: 'application/json' } })).status).toBe(406);
      expect((await mcpPost(s, message, { headers: { 'content-type': 'text/plain' } })).status).toBe(415);
    });

    it('has no server stream and no sessions: GET and DELETE answer 405', async () => {
      for (const method of ['GET', 'DELETE']) {
        const r = await s.call(method, '/mcp');
        expect(r.status).toBe(405);
        expect(r.headers.get('allow')).toBe('POST');
      }
    });

    it('lists the eleven tools with input schemas from the REST schemas, output schemas and annotations', async () => {
      const { tools } = await mcp.listTools();
      expect(tools.map((t) => t.name)).toEqual(TOOL_NAMES);
      for (const t of tools) {
        expect(t.inputSchema.type).toBe('object');
        expect(t.outputSchema?.type).toBe('object');
        expect(t.annotations?.openWorldHint).toBe(false);
        expect(t.description?.length).toBeGreaterThan(20);
      }
      const run = tools.find((t) => t.name === 'run_query')!;
      expect(run.inputSchema.required).toEqual(['connectionId', 'sql']);
      expect(run.inputSchema.properties).toMatchObject({
        connectionId: { type: 'string', minLength: 1, maxLength: 200 },
        sql: { type: 'string', minLength: 1, maxLength: 100_000 },
        maxRows: { type: 'integer', minimum: 1, maximum: 10_000 },
      });
      expect(Object.keys(run.inputSchema.properties ?? {})).toEqual(['connectionId', 'sql', 'maxRows']);
      expect(run.annotations?.readOnlyHint).toBe(true);
      const ask = tools.find((t) => t.name === 'ask_question')!;
      expect(ask.inputSchema.required).toEqual(['question', 'connectionId']);
      expect(ask.inputSchema.properties).toMatchObject({ question: { maxLength: 8000 } });
      expect(ask.annotations?.readOnlyHint).toBe(false);
      const submit = tools.find((t) => t.name === 'submit_for_approval')!;
      expect(submit.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: false });
      expect(Object.keys(submit.inputSchema.properties ?? {})).toEqual(['connectionId', 'sql', 'context']);
      expect(submit.inputSchema.required).toEqual(['connectionId', 'sql']);
      const widget = tools.find((t) => t.name === 'get_widget_data')!;
      expect(widget.inputSchema.properties?.refresh).toMatchObject({ type: 'boolean' });
      expect(widget.inputSchema.required).toEqual(['dashboardId', 'widgetId']);
      // Portable schemas (the MCP Inspector's --strict check): no `type` array anywhere, no schema that
      // constrains nothing (a nullable field is `anyOf` of one-type branches).
      const problems: string[] = [];
      const walk = (node: unknown, path: string, key?: string) => {
        if (typeof node === 'boolean') {
          if (key !== 'additionalProperties') problems.push(`${path}: bare ${node}`);
          return;
        }
        if (!node || typeof node !== 'object') return;
        const n = node as Record<string, unknown>;
        if (Array.isArray(n.type)) problems.push(`${path}: type ${JSON.stringify(n.type)}`);
        const annotations = ['title', 'description', 'default', 'examples'];
        if (key !== 'not' && !Object.keys(n).some((k) => !annotations.includes(k)))
          problems.push(`${path}: constrains nothing`);
        for (const [k, v] of Object.entries(n)) {
          if (['properties', '$defs', 'patternProperties'].includes(k))
            for (const [name, sub] of Object.entries(v as object)) walk(sub, `${path}.${k}.${name}`, k);
          else if (['anyOf', 'oneOf', 'allOf', 'prefixItems'].includes(k))
            for (const [i, sub] of (v as unknown[]).entries()) walk(sub, `${path}.${k}[${i}]`, k);
          else if (['items', 'additionalProperties', 'not', 'contains'].includes(k))
            walk(v, `${path}.${k}`, k);
        }
      };
      for (const t of tools) {
        walk(t.inputSchema, `${t.name}.inputSchema`);
        walk(t.outputSchema, `${t.name}.outputSchema`);
      }
      expect(problems).toEqual([]);
      const search = tools.find((t) => t.name === 'search_schema')!;
      expect(Object.keys(search.inputSchema.properties ?? {})).toEqual(['connectionId', 'query', 'limit']);
    });
  });

  describe.each(['POSTGRES', 'MARIADB', 'SQLITE'])('on %s', (type) => {
    const id = () => conn[type];
    beforeEach((c) => {
      if (!conn[type]) c.skip();
    });

    it('run_query answers what POST /connections/{id}/query answers, and history says it came from MCP', async () => {
      const sql = `SELECT id, name FROM ${T} ORDER BY id`;
      const r = await callTool(mcp, 'run_query', { connectionId: id(), sql });
      expect(r.isError).toBeFalsy();
      const viaRest = (await rest('POST', `/connections/${id()}/query`, { sql })).data;
      expect(untimed(r.structuredContent)).toEqual(untimed(viaRest));
      expect(r.structuredContent.rows).toEqual(ROWS);
      expect(textOf(r)).toContain('| id | name |');
      expect(textOf(r)).toContain('| 2 | bolt |');
      expect(textOf(r)).toContain('3 rows.');
      const history = (await rest('GET', `/connections/${id()}/queries?pageSize=2`)).data;
      expect(history.map((h: any) => h.source)).toEqual(['query', 'mcp']);
      expect(history[1]).toMatchObject({ sql, status: 'SUCCESS', rowCount: 3 });
    });

    it('refuses a write, a multi-statement and a function escape like REST does, and the data stays', async () => {
      const escapeSql = type === 'SQLITE' ? "SELECT load_extension('/tmp/nothing')" : `SELECT ${T}_bump()`;
      for (const sql of [
        `UPDATE ${T} SET name = 'x'`,
        `DELETE FROM ${T}`,
        `SELECT 1; DELETE FROM ${T}`,
        escapeSql,
      ]) {
        const r = await callTool(mcp, 'run_query', { connectionId: id(), sql });
        expect(r.isError, sql).toBe(true);
        const viaRest = await s.call('POST', `/connections/${id()}/query`, { body: { sql } });
        // PostgreSQL in open mode (the login reaches no escape: docs/internals/read-modes.md) runs the
        // owner's function, and PostgreSQL's read-only transaction refuses its UPDATE: 422, as on REST.
        const byServer = type === 'POSTGRES' && sql === escapeSql;
        expect(viaRest.status, sql).toBe(byServer ? 422 : 400);
        expect(r.structuredContent.error.code).toBe(viaRest.body.error.code);
        const code = byServer ? 'QUERY_FAILED' : 'READ_ONLY_VIOLATION';
        expect(r.structuredContent.error.code).toBe(code);
        expect(textOf(r)).toMatch(new RegExp(`^${code}: `));
        if (byServer) expect(textOf(r)).toMatch(/read-only transaction/);
        expect(await readBack(type)).toEqual(ROWS);
      }
      const history = (await rest('GET', `/connections/${id()}/queries?pageSize=2`)).data;
      expect(history[1]).toMatchObject(
        type === 'POSTGRES'
          ? { source: 'mcp', status: 'FAILED', errorCode: 'QUERY_FAILED' }
          : { source: 'mcp', status: 'REJECTED', errorCode: 'READ_ONLY_VIOLATION' },
      );
    });

    it('runs a 100,000-character statement and refuses one character more, naming sql', async () => {
      const head = 'SELECT 1 AS x /*';
      const sql = `${head}${'-'.repeat(100_000 - head.length - 2)}*/`;
      expect(sql.length).toBe(100_000);
      const ok = await callTool(mcp, 'run_query', { connectionId: id(), sql });
      expect(ok.isError, textOf(ok)).toBeFalsy();
      expect(ok.structuredContent.rows).toEqual([{ x: 1 }]);
      const over = await callTool(mcp, 'run_query', { connectionId: id(), sql: `${sql} ` });
      expect(over.isError).toBe(true);
      expect(over.structuredContent.error.code).toBe('VALIDATION_ERROR');
      expect(over.structuredContent.error.details.issues[0].path).toBe('sql');
    });

    it('caps an oversized result at the row cap, marks it truncated and shows 50 rows as text', async () => {
      const sql =
        'WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1200) SELECT i FROM n';
      const r = await callTool(mcp, 'run_query', { connectionId: id(), sql });
      expect(r.isError, textOf(r)).toBeFalsy();
      expect(r.structuredContent).toMatchObject({ rowCount: 1000, truncated: true });
      expect(r.structuredContent.rows).toHaveLength(1000);
      const text = textOf(r);
      expect(text.split('\n').filter((l) => /^\| \d+ \|$/.test(l))).toHaveLength(50);
      expect(text).toContain('1000 rows.');
      expect(text).toContain('Showing the first 50');
      expect(text).toContain('Truncated');
      const capped = await callTool(mcp, 'run_query', { connectionId: id(), sql, maxRows: 5 });
      expect(capped.structuredContent).toMatchObject({ rowCount: 5, truncated: true });
    });

    it('search_schema gives the best-linked table with the columns and keys of the cached schema', async () => {
      const r = await callTool(mcp, 'search_schema', { connectionId: id(), query: `${T} names`, limit: 3 });
      expect(r.isError, textOf(r)).toBeFalsy();
      const schema = (await rest('GET', `/connections/${id()}/schema`)).data;
      const first = r.structuredContent.tables[0];
      const cached = schema.schema.tables.find((t: any) => t.name === first.name);
      expect(first.name).toContain(T);
      expect(first).toEqual({ ...cached, annotations: [] });
      expect(first.primaryKey).toEqual(['id']);
      expect(r.structuredContent.totalTables).toBe(schema.schema.tables.length);
      expect(r.structuredContent.tables.length).toBeLessThanOrEqual(3);
      expect(textOf(r)).toContain(`${first.name}(id `);
    });

    it('reads the schema resource, equal to GET /connections/{id}/schema', async () => {
      const uri = `loupe://connections/${id()}/schema`;
      const listed = await mcp.listResources();
      expect(listed.resources.map((x) => x.uri)).toContain(uri);
      const read = await mcp.readResource({ uri });
      expect(read.contents[0].mimeType).toBe('application/json');
      expect(JSON.parse((read.contents[0] as { text: string }).text)).toEqual(
        (await rest('GET', `/connections/${id()}/schema`)).data,
      );
    });
  });

  describe('the other tools answer what their REST operations answer', () => {
    const lite = () => conn.SQLITE;

    it('list_connections', async () => {
      const r = await callTool(mcp, 'list_connections');
      const viaRest = await rest('GET', '/connections?pageSize=100');
      expect(r.structuredContent).toEqual({
        connections: viaRest.data,
        total: viaRest.meta.pagination.total,
        truncated: false,
      });
      expect(textOf(r)).toContain(`| ${lite()} | lite | SQLITE |`);
      expect(textOf(r)).toMatch(new RegExp(`${viaRest.meta.pagination.total} connections in all\\.$`));
      expect(textOf(r)).not.toMatch(/[[{]"/);
    });

    it('list_saved_queries and run_saved_query', async () => {
      const created = (
        await rest('POST', '/saved-queries', {
          name: `by id ${suffix}`,
          query: `SELECT id, name FROM ${T} WHERE id = {{id}}`,
          connectionId: lite(),
          parameters: [{ name: 'id', type: 'integer', required: true }],
          tags: ['mcp', 'test'],
        })
      ).data;
      const listed = await callTool(mcp, 'list_saved_queries', { connectionId: lite(), tags: 'mcp' });
      const viaRest = await rest('GET', `/saved-queries?connectionId=${lite()}&tags=mcp&pageSize=100`);
      expect(listed.structuredContent.savedQueries).toEqual(viaRest.data);
      expect(listed.structuredContent.savedQueries.map((q: any) => q.id)).toEqual([created.id]);
      // The text says the parameters and tags in words, not as JSON, and counts in the singular.
      const listedText = textOf(listed);
      expect(listedText).toContain(`| by id ${suffix} | ${lite()} |`);
      expect(listedText).toContain('| id (integer) | mcp, test |');
      expect(listedText).toMatch(/\n\n1 saved query in all\.$/);
      expect(listedText).not.toMatch(/[[{]"/);
      const run = await callTool(mcp, 'run_saved_query', { id: created.id, params: { id: 2 } });
      expect(run.isError, textOf(run)).toBeFalsy();
      const runRest = (await rest('POST', `/saved-queries/${created.id}/run`, { params: { id: 2 } })).data;
      expect(untimed(run.structuredContent)).toEqual(untimed(runRest));
      expect(run.structuredContent.rows).toEqual([ROWS[1]]);
      // A bad parameter is the REST 400, reported under the tool's argument.
      const bad = await callTool(mcp, 'run_saved_query', { id: created.id, params: { id: 'two' } });
      expect(bad.isError).toBe(true);
      expect(bad.structuredContent.error.code).toBe('VALIDATION_ERROR');
      // Injection through a parameter is bound, never spliced: the data stays.
      const injected = await callTool(mcp, 'run_saved_query', {
        id: created.id,
        params: { id: `1; DELETE FROM ${T}` },
      });
      expect(injected.isError).toBe(true);
      expect(await readBack('SQLITE')).toEqual(ROWS);
    });

    it('list_metrics and evaluate_metric', async () => {
      const metric = (
        await rest('POST', '/metrics', {
          name: `items ${suffix}`,
          formula: `SELECT count(*) FROM ${T}`,
          connectionId: lite(),
          unit: 'items',
        })
      ).data;
      const listed = await callTool(mcp, 'list_metrics');
      expect(listed.structuredContent.metrics).toEqual((await rest('GET', '/metrics?pageSize=100')).data);
      const value = await callTool(mcp, 'evaluate_metric', { id: metric.id });
      expect(value.isError, textOf(value)).toBeFalsy();
      const viaRest = (await rest('GET', `/metrics/${metric.id}/value`)).data;
      expect(value.structuredContent).toMatchObject({ value: 3, unit: 'items' });
      expect(value.structuredContent.value).toEqual(viaRest.value);
      expect(textOf(value)).toContain('- value: 3');
      if (conn.POSTGRES) {
        const onPg = await callTool(mcp, 'evaluate_metric', { id: metric.id, connectionId: conn.POSTGRES });
        expect(Number(onPg.structuredContent.value)).toBe(3);
      }
    });

    it('list_dashboards and get_widget_data', async () => {
      const dash = (await rest('POST', '/dashboards', { title: `Items ${suffix}` })).data;
      const widget = (
        await rest('POST', `/dashboards/${dash.id}/widgets`, {
          type: 'TABLE',
          title: 'All items',
          query: `SELECT id, name FROM ${T} ORDER BY id`,
          connectionId: lite(),
        })
      ).data;
      const listed = await callTool(mcp, 'list_dashboards');
      expect(listed.structuredContent.dashboards).toEqual(
        (await rest('GET', '/dashboards?pageSize=100')).data,
      );
      // One row per widget with both ids get_widget_data takes; no widget JSON in the table.
      const listedText = textOf(listed);
      expect(listedText).toContain('| dashboard | dashboardId | widget | type | widgetId |');
      expect(listedText).toContain(`| Items ${suffix} | ${dash.id} | All items | TABLE | ${widget.id} |`);
      expect(listedText).not.toMatch(/[[{]"/);
      const count = listed.structuredContent.total;
      expect(listedText).toMatch(new RegExp(`\\n\\n${count} dashboards? in all\\.$`));
      const viaRest = (await rest('GET', `/dashboards/${dash.id}/widgets/${widget.id}/data`)).data;
      const data = await callTool(mcp, 'get_widget_data', { dashboardId: dash.id, widgetId: widget.id });
      expect(data.isError, textOf(data)).toBeFalsy();
      expect(data.structuredContent.rows).toEqual(ROWS);
      expect({ ...data.structuredContent, cached: true }).toMatchObject({
        ...untimed(viaRest),
        cached: true,
        cachedAt: data.structuredContent.cachedAt,
      });
      // refresh: true (a JSON boolean) skips the widget cache: a row added since shows at once and becomes
      // the cached answer.
      dbs.sqlite.exec(`INSERT INTO ${T} (id, name) VALUES (99, 'added later')`);
      const cached = await callTool(mcp, 'get_widget_data', { dashboardId: dash.id, widgetId: widget.id });
      expect(cached.structuredContent.cached).toBe(true);
      expect(cached.structuredContent.rows).toEqual(ROWS);
      const fresh = await callTool(mcp, 'get_widget_data', {
        dashboardId: dash.id,
        widgetId: widget.id,
        refresh: true,
      });
      expect(fresh.structuredContent.cached).toBe(false);
      expect(fresh.structuredContent.rows).toEqual([...ROWS, { id: 99, name: 'added later' }]);
      const after = await callTool(mcp, 'get_widget_data', { dashboardId: dash.id, widgetId: widget.id });
      expect(after.structuredContent).toMatchObject({ cached: true, rows: fresh.structuredContent.rows });
      dbs.sqlite.exec(`DELETE FROM ${T} WHERE id = 99`);
      expect(textOf(fresh)).toContain('Fresh result.');
      const notFresh = await callTool(mcp, 'get_widget_data', {
        dashboardId: dash.id,
        widgetId: widget.id,
        refresh: false,
      });
      expect(notFresh.structuredContent).toMatchObject({ cached: true });
      expect(textOf(notFresh)).toContain('From the widget cache');
      for (const refresh of ['yes', 'true', 1]) {
        const bad = await callTool(mcp, 'get_widget_data', {
          dashboardId: dash.id,
          widgetId: widget.id,
          refresh,
        });
        expect(bad.isError, String(refresh)).toBe(true);
        expect(bad.structuredContent.error.details.issues[0].path).toBe('refresh');
      }
      const missing = await callTool(mcp, 'get_widget_data', { dashboardId: dash.id, widgetId: 'nope' });
      expect(missing.structuredContent.error.code).toBe('NOT_FOUND');
    });

    it('submit_for_approval creates the pending query and never runs it', async () => {
      const pg = conn.POSTGRES;
      const sql = `UPDATE ${T} SET name = 'approved?' WHERE id = 1`;
      // On a read-only connection a write cannot even be submitted: the REST 400.
      const refused = await callTool(mcp, 'submit_for_approval', { connectionId: pg, sql });
      const refusedRest = await s.call('POST', '/queries/submit', { body: { connectionId: pg, query: sql } });
      expect(refused.isError).toBe(true);
      expect(refused.structuredContent.error).toEqual(refusedRest.body.error);
      await rest('PATCH', `/connections/${pg}`, { readOnly: false });
      try {
        // The former argument name is refused, naming the current one.
        const old = await callTool(mcp, 'submit_for_approval', { connectionId: pg, query: sql });
        expect(old.isError).toBe(true);
        expect(old.structuredContent.error.details.issues).toContainEqual({
          path: 'query',
          message: 'Renamed: use "sql"',
          code: 'unrecognized_keys',
        });
        const r = await callTool(mcp, 'submit_for_approval', { connectionId: pg, sql, context: 'rename' });
        expect(r.isError, textOf(r)).toBeFalsy();
        expect(r.structuredContent).toMatchObject({
          status: 'PENDING',
          statementKind: 'write',
          query: sql,
          context: 'rename',
          connectionId: pg,
        });
        expect((await rest('GET', `/queries/${r.structuredContent.id}/status`)).data).toEqual(
          r.structuredContent,
        );
        expect(textOf(r)).toContain('- status: PENDING');
      } finally {
        await rest('PATCH', `/connections/${pg}`, { readOnly: true });
      }
      expect(await readBack('POSTGRES')).toEqual(ROWS);
    });

    it('ask_question answers with the SQL and its result, charged as chat', async () => {
      const sql = `SELECT id, name FROM ${T} ORDER BY id`;
      fake.script(
        {
          toolCalls: [{ name: 'run_query', arguments: { sql } }],
        },
        { content: 'There are three items: anvil, bolt and crate.' },
      );
      const usageBefore = (await rest('GET', '/usage?pageSize=100')).meta.pagination.total;
      const r = await callTool(mcp, 'ask_question', {
        connectionId: lite(),
        question: 'Which items are there?',
      });
      expect(r.isError, textOf(r)).toBeFalsy();
      expect(r.structuredContent).toMatchObject({
        content: 'There are three items: anvil, bolt and crate.',
        sqlQuery: sql,
        queryResult: { rows: ROWS, rowCount: 3 },
      });
      expect(completions(fake)).toHaveLength(2);
      // The same conversation over REST holds the question and this answer.
      const messages = (await rest('GET', `/conversations/${r.structuredContent.conversationId}/messages`))
        .data;
      expect(messages.map((m: any) => m.content)).toEqual([
        'Which items are there?',
        'There are three items: anvil, bolt and crate.',
      ]);
      const usage = await rest('GET', '/usage?pageSize=100');
      expect(usage.meta.pagination.total).toBe(usageBefore + 2);
      expect(usage.data[0].feature).toBe('chat');
      expect(textOf(r)).toContain('```sql');
      expect(textOf(r)).toContain('| 3 | crate |');
    });
  });

  describe('the stdio bridge (npm run -s loupe -- mcp)', () => {
    const bridged = async (key: string) => {
      const client = new Client({ name: 'stdio-test', version: '1.0.0' });
      const transport = new StdioClientTransport({
        command: 'node_modules/.bin/tsx',
        args: ['infra/local/cli.ts', 'mcp', '--url', s.url, '--key', key],
        env: { ...(process.env as Record<string, string>), LOUPE_LOG_LEVEL: 'SILENT' },
        stderr: 'pipe',
      });
      try {
        await client.connect(transport);
      } catch (e) {
        await transport.close(); // ends the bridge process
        throw e;
      }
      return client;
    };

    it('forwards stdio messages to the endpoint and back, unchanged', async () => {
      const client = await bridged(s.adminKey);
      try {
        expect(client.getServerVersion()).toMatchObject({ name: 'loupe' });
        expect((await client.listTools()).tools).toEqual((await mcp.listTools()).tools);
        const r = await callTool(client, 'run_query', {
          connectionId: conn.SQLITE,
          sql: `SELECT * FROM ${T}`,
        });
        expect(r.structuredContent.rows).toEqual(ROWS);
      } finally {
        await client.close();
      }
    }, 60_000);

    it('answers a refused key as a JSON-RPC error instead of hanging', async () => {
      await expect(bridged(`lp_${'y'.repeat(40)}`)).rejects.toThrow(/401|Unauthorized|Invalid API key/i);
    }, 60_000);
  });

  describe('the loupe-mcp package, run the way docs/guides/mcp.md says (npx on the served tarball)', () => {
    let home: string;
    beforeAll(() => {
      // `npm run build:console` (which npm test runs first) packs it; packed here when only this file runs.
      if (!existsSync(join(CONSOLE_DIR, 'loupe-mcp.tgz')))
        execFileSync('node', ['infra/mcp-bridge/pack.mjs'], { stdio: 'ignore' });
      // A folder outside any checkout, with an empty npm cache: npx must fetch the package from the server.
      home = mkdtempSync(join(tmpdir(), 'loupe-npx-'));
    });
    afterAll(() => rmSync(home, { recursive: true, force: true }));

    it('npx -y <origin>/loupe-mcp.tgz with LOUPE_URL and LOUPE_API_KEY: the same tools, a query over stdio', async () => {
      const origin = s.url.replace(/\/v1$/, '');
      const client = new Client({ name: 'loupe-npx-test', version: '1.0.0' });
      const transport = new StdioClientTransport({
        command: 'npx',
        args: ['-y', `${origin}/loupe-mcp.tgz`],
        cwd: home,
        env: {
          PATH: process.env.PATH ?? '',
          HOME: home,
          npm_config_cache: join(home, 'npm-cache'),
          npm_config_update_notifier: 'false',
          LOUPE_URL: s.url,
          LOUPE_API_KEY: s.adminKey,
        },
        stderr: 'pipe',
      });
      try {
        await client.connect(transport);
        expect(client.getServerVersion()).toMatchObject({ name: 'loupe' });
        expect((await client.listTools()).tools).toEqual((await mcp.listTools()).tools);
        const r = await callTool(client, 'run_query', {
          connectionId: conn.SQLITE,
          sql: `SELECT * FROM ${T}`,
        });
        expect(r.structuredContent.rows).toEqual(ROWS);
        const refused = await callTool(client, 'run_query', {
          connectionId: conn.SQLITE,
          sql: `DELETE FROM ${T}`,
        });
        expect(refused.structuredContent.error.code).toBe('READ_ONLY_VIOLATION');
      } finally {
        await client.close();
      }
      expect(await readBack('SQLITE')).toEqual(ROWS);
    }, 120_000);
  });

  describe('who may do what', () => {
    let outsiderKey: string;
    let memberKey: string;
    beforeAll(async () => {
      outsiderKey = (
        await createOrganization({ name: `Other ${suffix}`, adminEmail: `a-${suffix}@other.example` })
      ).key;
      const m = await rest('POST', '/members', {
        email: `m-${suffix}@example.com`,
        name: 'Member',
        role: 'member',
        connectionIds: [conn.SQLITE],
      });
      memberKey = (await rest('POST', `/members/${m.data.id}/keys`, { name: 'member key' })).data.key;
    });

    it("another organization's key cannot list, read or run a connection", async () => {
      const { client } = await mcpClient(s, outsiderKey);
      const listed = await callTool(client, 'list_connections');
      expect(listed.structuredContent.connections).toEqual([]);
      expect((await client.listResources()).resources).toEqual([]);
      for (const type of types()) {
        const r = await callTool(client, 'run_query', {
          connectionId: conn[type],
          sql: `SELECT * FROM ${T}`,
        });
        expect(r.isError).toBe(true);
        expect(r.structuredContent.error.code).toBe('NOT_FOUND');
        const search = await callTool(client, 'search_schema', { connectionId: conn[type], query: 'items' });
        expect(search.structuredContent.error.code).toBe('NOT_FOUND');
        const read = await client
          .readResource({ uri: `loupe://connections/${conn[type]}/schema` })
          .catch((e) => e);
        expect(read).toBeInstanceOf(McpError);
        expect(read.code).toBe(-32002);
        const submit = await callTool(client, 'submit_for_approval', {
          connectionId: conn[type],
          sql: `DELETE FROM ${T}`,
        });
        expect(submit.structuredContent.error.code).toBe('NOT_FOUND');
        expect(await readBack(type)).toEqual(ROWS);
      }
      await client.close();
    });

    it('a member sees and reaches only the assigned connection', async () => {
      const { client } = await mcpClient(s, memberKey);
      const listed = await callTool(client, 'list_connections');
      expect(listed.structuredContent.connections.map((c: any) => c.id)).toEqual([conn.SQLITE]);
      expect((await client.listResources()).resources.map((x) => x.uri)).toEqual([
        `loupe://connections/${conn.SQLITE}/schema`,
      ]);
      const ok = await callTool(client, 'run_query', {
        connectionId: conn.SQLITE,
        sql: `SELECT id FROM ${T}`,
      });
      expect(ok.isError).toBeFalsy();
      for (const type of types().filter((t) => t !== 'SQLITE')) {
        const r = await callTool(client, 'run_query', {
          connectionId: conn[type],
          sql: `SELECT id FROM ${T}`,
        });
        expect(r.structuredContent.error.code).toBe('NOT_FOUND');
        const ask = await callTool(client, 'ask_question', { connectionId: conn[type], question: 'Items?' });
        expect(ask.structuredContent.error.code).toBe('NOT_FOUND');
      }
      expect(completions(fake)).toHaveLength(0);
      await client.close();
    });

    it('lists only the tools the key has scopes for, and refuses the others like REST (403)', async () => {
      const expected: Record<string, string[]> = {
        query: [
          'run_query',
          'list_saved_queries',
          'run_saved_query',
          'list_metrics',
          'evaluate_metric',
          'submit_for_approval',
        ],
        connections: ['list_connections', 'search_schema'],
        chat: ['ask_question'],
        dashboards: ['list_dashboards', 'get_widget_data'],
        usage: [],
      };
      for (const [scope, names] of Object.entries(expected)) {
        const { client } = await mcpClient(s, await keyWith([scope]));
        expect((await client.listTools()).tools.map((t) => t.name)).toEqual(names);
        if (scope !== 'connections') {
          expect((await client.listResources()).resources).toEqual([]);
          const listed = await callTool(client, 'list_connections');
          expect(listed.isError).toBe(true);
          expect(listed.structuredContent.error.code).toBe('FORBIDDEN');
        }
        if (scope !== 'query') {
          const run = await callTool(client, 'run_query', { connectionId: conn.SQLITE, sql: 'SELECT 1' });
          expect(run.structuredContent.error).toMatchObject({
            code: 'FORBIDDEN',
            message: 'This API key lacks the "query" scope required for this operation.',
          });
        }
        await client.close();
      }
    });

    it('answers 401 with the RFC 9728 challenge to a missing, malformed or unknown key', async () => {
      const metadata = `${s.url}/.well-known/oauth-protected-resource`;
      for (const key of [null, 'not-a-key', `lp_${'x'.repeat(40)}`]) {
        const r = await mcpPost(s, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { key });
        expect(r.status).toBe(401);
        expect(r.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${metadata}"`);
        expect(r.json.error.code).toBe('UNAUTHORIZED');
      }
      const doc = await fetch(metadata);
      expect(doc.status).toBe(200);
      expect(((await doc.json()) as { resource: string }).resource).toBe(s.url);
      await expect(mcpClient(s, null)).rejects.toThrow();
    });

    it('a revoked key stops working on its next request', async () => {
      const created = (await rest('POST', '/keys', { name: 'to revoke' })).data;
      const { client } = await mcpClient(s, created.key);
      expect((await callTool(client, 'list_connections')).isError).toBeFalsy();
      await rest('DELETE', `/keys/${created.id}`);
      await expect(callTool(client, 'list_connections')).rejects.toThrow();
      const raw = await mcpPost(s, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { key: created.key });
      expect(raw.status).toBe(401);
      await client.close().catch(() => {});
    });

    it('names the bad argument: missing, wrong type, out of range, unknown', async () => {
      const cases: [string, Record<string, unknown>, string][] = [
        ['run_query', { connectionId: conn.SQLITE }, 'sql'],
        ['run_query', { connectionId: 42, sql: 'SELECT 1' }, 'connectionId'],
        ['run_query', { connectionId: conn.SQLITE, sql: 'SELECT 1', maxRows: 0 }, 'maxRows'],
        ['run_query', { connectionId: conn.SQLITE, sql: 'SELECT 1', maxRows: 10_001 }, 'maxRows'],
        ['run_query', { connectionId: conn.SQLITE, sql: '' }, 'sql'],
        ['run_query', { connectionId: conn.SQLITE, sql: 'SELECT 1', source: 'approval' }, 'source'],
        ['ask_question', { question: 'Items?' }, 'connectionId'],
        ['ask_question', { connectionId: conn.SQLITE, question: 'x'.repeat(8001) }, 'question'],
        ['search_schema', { connectionId: conn.SQLITE, query: 'items', limit: 51 }, 'limit'],
        ['search_schema', { connectionId: conn.SQLITE }, 'query'],
        ['get_widget_data', { dashboardId: 'x'.repeat(201), widgetId: 'w' }, 'dashboardId'],
        ['get_widget_data', { dashboardId: 'd', widgetId: 'w', refresh: 'true' }, 'refresh'],
        ['submit_for_approval', { connectionId: conn.SQLITE }, 'sql'],
        [
          'submit_for_approval',
          { connectionId: conn.SQLITE, sql: 'SELECT 1', context: 'c'.repeat(2001) },
          'context',
        ],
        ['list_saved_queries', { tags: '' }, 'tags'],
      ];
      for (const [tool, args, field] of cases) {
        const r = await callTool(mcp, tool, args);
        expect(r.isError, `${tool} ${field}`).toBe(true);
        expect(r.structuredContent.error.code).toBe('VALIDATION_ERROR');
        expect(r.structuredContent.error.details.issues.map((i: any) => i.path)).toContain(field);
        expect(textOf(r)).toContain(`${field}: `);
      }
      expect(completions(fake)).toHaveLength(0);
      expect(await readBack('SQLITE')).toEqual(ROWS);
    });

    it('refuses a body over 1 MiB before reading it (413)', async () => {
      const r = await mcpPost(s, {
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'run_query', arguments: { connectionId: conn.SQLITE, sql: 'x'.repeat(1_100_000) } },
      });
      expect(r.status).toBe(413);
    });
  });
});
