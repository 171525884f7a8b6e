import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/server';

describe('chat without a model provider', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ env: { OPENAI_API_KEY: undefined, OPENAI_BASE_URL: undefined } });
  });
  afterAll(() => s.stop());

  it('answers 503 AI_NOT_CONFIGURED saying how to set one, streaming or not, and stores nothing', async () => {
    for (const stream of [false, true]) {
      const r = await s.call('POST', '/chat', { body: { message: 'How many orders?', stream } });
      expect(r.status).toBe(503);
      expect(r.headers.get('content-type')).toMatch(/application\/json/);
      expect(r.body.error.code).toBe('AI_NOT_CONFIGURED');
      // Both ways: a key (OpenAI or another provider), or a keyless local server by its URL alone.
      expect(r.body.error.message).toMatch(/Either set OPENAI_API_KEY/);
      expect(r.body.error.message).toMatch(/OPENAI_BASE_URL alone for a keyless OpenAI-compatible server/);
      expect(r.body.error.message).toMatch(/Ollama/);
    }
    expect((await s.call('GET', '/conversations')).body.meta.pagination.total).toBe(0);
    expect((await s.call('GET', '/usage')).body.meta.pagination.total).toBe(0);
  });

  it('still checks the request and the conversation first (400, 404)', async () => {
    expect((await s.call('POST', '/chat', { body: { message: '' } })).status).toBe(400);
    const r = await s.call('POST', '/chat', { body: { message: 'hi', conversationId: 'nope' } });
    expect(r.status).toBe(404);
  });

  it('keeps conversations usable', async () => {
    const c = await s.call('POST', '/conversations', { body: { title: 'Notes' } });
    expect(c.status).toBe(201);
    expect((await s.call('GET', `/conversations/${c.body.data.id}`)).status).toBe(200);
  });
});
