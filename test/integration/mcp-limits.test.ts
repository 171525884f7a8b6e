import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrganization } from '../../shared/auth/bootstrap';
import { addBalance } from '../../shared/usage/balance';
import { createConnection, placeSqlite } from '../support/connections';
import { completions, type FakeOpenAI, startFakeOpenAI } from '../support/fake-openai';
import { callTool, mcpClient, mcpPost, textOf } from '../support/mcp';
import { startTestServer, type TestServer } from '../support/server';
import { earlyInRateWindow } from '../support/wait';

const ORG_LIMIT = 12;
const AI_LIMIT = 2;

const earlyInWindow = () => earlyInRateWindow();

/**
 * The REST limits through MCP: the organization's request limit and the AI limit answer RATE_LIMITED
 * tool results with the retry time, and an empty balance CREDITS_EXHAUSTED, before any model call.
 */
describe('MCP endpoint limits', () => {
  let s: TestServer;
  let fake: FakeOpenAI;
  const dir = mkdtempSync(join(tmpdir(), 'loupe-mcp-limits-'));
  const file = join(dir, 'tiny.db');

  /** A new organization (its own rate-limit windows) with one SQLite connection. */
  const newOrg = async (name: string) => {
    const o = await createOrganization({ name, adminEmail: `admin@${name}.example` });
    const connectionId = await createConnection(
      s,
      { name: 'tiny', type: 'SQLITE', database: placeSqlite(s, file, o.orgId) },
      o.key,
    );
    return { ...o, connectionId };
  };

  beforeAll(async () => {
    const d = new DatabaseSync(file);
    d.exec('CREATE TABLE t (id INTEGER PRIMARY KEY); INSERT INTO t VALUES (1);');
    d.close();
    fake = await startFakeOpenAI();
    s = await startTestServer({
      env: {
        OPENAI_API_KEY: fake.apiKey,
        OPENAI_BASE_URL: fake.url,
        LOUPE_MODEL: 'test-model',
        LOUPE_ORG_RATE_LIMIT: String(ORG_LIMIT),
        LOUPE_AI_RATE_LIMIT: String(AI_LIMIT),
        LOUPE_DEFAULT_BALANCE_CENTS: '0',
      },
    });
  });
  afterAll(async () => {
    await s?.stop();
    await fake?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('counts each MCP request against the organization limit; over it, a tool call is a RATE_LIMITED result', async () => {
    const o = await newOrg('mcp-rate');
    await earlyInWindow();
    const { client } = await mcpClient(s, o.key);
    // Each POST counts once, like a REST request (initialize and its notification included).
    let calls = 0;
    for (;;) {
      const r = await callTool(client, 'run_query', {
        connectionId: o.connectionId,
        sql: 'SELECT id FROM t',
      });
      if (r.isError) {
        expect(r.structuredContent.error.code).toBe('RATE_LIMITED');
        const retry = r.structuredContent.error.details.retryAfterSeconds;
        expect(retry).toBeGreaterThanOrEqual(1);
        expect(retry).toBeLessThanOrEqual(60);
        expect(textOf(r)).toBe(`RATE_LIMITED: Too many requests; retry later. Retry after ${retry} s.`);
        break;
      }
      calls += 1;
      expect(calls).toBeLessThan(ORG_LIMIT);
    }
    // The REST API of the organization is limited too (one shared count), and other messages get the 429.
    const viaRest = await s.call('GET', '/connections', { key: o.key });
    expect(viaRest.status).toBe(429);
    const list = await mcpPost(s, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { key: o.key });
    expect(list.status).toBe(429);
    expect(Number(list.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    // Another organization is not affected.
    const other = await newOrg('mcp-rate-other');
    const { client: otherClient } = await mcpClient(s, other.key);
    expect((await callTool(otherClient, 'list_connections')).isError).toBeFalsy();
    await client.close().catch(() => {});
    await otherClient.close();
  });

  it('counts every message of a JSON-RPC batch, so a batch cannot run more than the limit', async () => {
    const o = await newOrg('mcp-batch');
    await earlyInWindow();
    const call = (id: number) => ({
      jsonrpc: '2.0',
      id,
      method: 'tools/call',
      params: { name: 'run_query', arguments: { connectionId: o.connectionId, sql: 'SELECT id FROM t' } },
    });
    const headers = { 'mcp-protocol-version': '2025-03-26' };
    const batch = await mcpPost(
      s,
      Array.from({ length: ORG_LIMIT + 3 }, (_, i) => call(i + 1)),
      {
        key: o.key,
        headers,
      },
    );
    expect(batch.status).toBe(200);
    expect(batch.json).toHaveLength(ORG_LIMIT + 3);
    for (const r of batch.json) expect(r.result.structuredContent.error.code).toBe('RATE_LIMITED');
    const history = await s.call('GET', `/connections/${o.connectionId}/queries`, { key: o.key });
    expect(history.status).toBe(429);
  });

  it('charges ask_question to the AI limit and refuses an empty balance before calling the model', async () => {
    const o = await newOrg('mcp-ai');
    await earlyInWindow();
    const { client } = await mcpClient(s, o.key);
    const ask = () =>
      callTool(client, 'ask_question', { connectionId: o.connectionId, question: 'How many?' });
    const broke = await ask();
    expect(broke.isError).toBe(true);
    expect(broke.structuredContent.error.code).toBe('CREDITS_EXHAUSTED');
    expect(completions(fake)).toHaveLength(0);

    await addBalance(o.orgId, o.userId, 100);
    fake.script({ content: 'One.' });
    const answered = await ask();
    expect(answered.isError, textOf(answered)).toBeFalsy();
    expect(answered.structuredContent.content).toBe('One.');
    // AI_LIMIT asks in this window (the refused one counted too): the next is limited, the model not called.
    const limited = await ask();
    expect(limited.structuredContent.error.code).toBe('RATE_LIMITED');
    expect(completions(fake)).toHaveLength(1);
    // Non-AI tools still answer.
    const q = await callTool(client, 'run_query', { connectionId: o.connectionId, sql: 'SELECT id FROM t' });
    expect(q.isError).toBeFalsy();
    await client.close();
  });
});
