import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/server';

describe('local runtime smoke', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(() => s.stop());

  it('answers GET / with the key context in the envelope', async () => {
    const r = await s.call('GET', '/');
    expect(r.status).toBe(200);
    expect(r.body.data.authenticationMethod).toBe('api_key');
    expect(r.body.error).toBeNull();
  });

  it('has real databases provided', () => {
    expect(inject('postgres').port).toBeGreaterThan(0);
  });
});
