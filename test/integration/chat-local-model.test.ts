import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  completions,
  embeddingRequests,
  type FakeOpenAI,
  type RecordedRequest,
  startFakeOpenAI,
} from '../support/fake-openai';
import { callTool, mcpClient, textOf } from '../support/mcp';
import { startTestServer, type TestServer } from '../support/server';
import { waitFor } from '../support/wait';

/**
 * A local model server (Ollama, vLLM, LM Studio: OpenAI-compatible, no key) configured by OPENAI_BASE_URL
 * alone: chat over REST, MCP's ask_question and automatic annotation all use it, with the model named
 * by LOUPE_MODEL, and no embeddings call is ever made while LOUPE_EMBEDDING_MODEL is unset. The model
 * server is the tests' own OpenAI-compatible server started keyless (it accepts any Authorization).
 */
const ANNOTATED = 'The plans a customer can subscribe to (described by the local model).';

function localModel(req: RecordedRequest) {
  const messages = req.body.messages ?? [];
  const system = String(messages[0]?.content ?? '');
  const last = messages.at(-1);
  if (system.includes('You document database tables'))
    return { content: JSON.stringify({ table: ANNOTATED, columns: { code: "The plan's short code." } }) };
  if (last?.role === 'tool') return { content: `Found ${JSON.parse(last.content).rows?.length} plans.` };
  if (req.body.tools)
    return { toolCalls: [{ name: 'run_query', arguments: { sql: 'SELECT code FROM plans ORDER BY id' } }] };
  return { content: 'A small SaaS business.' };
}

describe('a keyless local model server, configured by OPENAI_BASE_URL alone', () => {
  let s: TestServer;
  let fake: FakeOpenAI;
  let demo: string;
  beforeAll(async () => {
    fake = await startFakeOpenAI({ apiKey: null });
    for (let i = 0; i < 50; i++) fake.script(localModel);
    s = await startTestServer({
      env: {
        OPENAI_API_KEY: undefined,
        OPENAI_BASE_URL: fake.url,
        LOUPE_MODEL: 'llama3.1:8b',
        LOUPE_EMBEDDING_MODEL: undefined,
        LOUPE_DEMO_DATA: 'true',
      },
    });
    const conns = await s.call('GET', '/connections');
    demo = conns.body.data.find((c: any) => c.name === 'Demo SaaS (SQLite)').id;
  });
  afterAll(async () => {
    await s?.stop();
    await fake?.stop();
  });

  it('chat answers with the SQL and its rows, asking the local server for the model named by LOUPE_MODEL', async () => {
    const before = completions(fake).length;
    const r = await s.call('POST', '/chat', {
      body: { message: 'Which plans are there?', connectionId: demo },
    });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toMatchObject({
      content: 'Found 4 plans.',
      sqlQuery: 'SELECT code FROM plans ORDER BY id',
      queryResult: { rowCount: 4 },
    });
    const sent = completions(fake).slice(before);
    expect(sent.length).toBeGreaterThanOrEqual(2);
    for (const req of sent) {
      expect(req.body.model).toBe('llama3.1:8b');
      // No key of anyone's is sent: the client's placeholder, which keyless servers ignore.
      expect(req.headers.authorization).toBe('Bearer not-needed');
    }
    // Usage is recorded as for any provider (a model without a price costs nothing).
    const usage = await s.call('GET', '/usage?pageSize=100');
    expect(usage.body.data.some((u: any) => u.model === 'llama3.1:8b' && u.feature === 'chat')).toBe(true);
  });

  it('MCP ask_question uses it too', async () => {
    const { client } = await mcpClient(s);
    try {
      const r = await callTool(client, 'ask_question', {
        connectionId: demo,
        question: 'Which plans are there?',
      });
      expect(r.isError, textOf(r)).toBeFalsy();
      expect(r.structuredContent).toMatchObject({ content: 'Found 4 plans.', queryResult: { rowCount: 4 } });
      expect(textOf(r)).toContain('| code |');
    } finally {
      await client.close();
    }
  });

  it('automatic annotation writes what the local model says', async () => {
    const r = await s.call('POST', `/connections/${demo}/annotations/auto`, { body: { tables: ['plans'] } });
    expect(r.status, r.text).toBe(202);
    const table = await waitFor('the model-written annotation', async () => {
      const list = (await s.call('GET', `/connections/${demo}/annotations?table=plans&pageSize=100`)).body
        .data;
      return list.find((a: any) => a.columnName === null && a.annotation === ANNOTATED);
    });
    expect(table.source).toBe('auto');
  });

  it('embeddings are optional: with LOUPE_EMBEDDING_MODEL unset nothing asks for them', () => {
    expect(embeddingRequests(fake)).toEqual([]);
    expect(fake.requests.every((r) => r.path === '/v1/chat/completions')).toBe(true);
  });
});
