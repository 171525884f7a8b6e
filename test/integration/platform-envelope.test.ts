import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/server';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

function expectEnvelope(body: any) {
  expect(Object.keys(body).sort()).toEqual(['data', 'error', 'meta']);
  expect(body.meta.requestId).toMatch(UUID);
  expect(new Date(body.meta.timestamp).toISOString()).toBe(body.meta.timestamp);
}

function expectError(r: { status: number; body: any }, status: number, code: string) {
  expect(r.status).toBe(status);
  expectEnvelope(r.body);
  expect(r.body.data).toBeNull();
  expect(r.body.error.code).toBe(code);
  expect(typeof r.body.error.message).toBe('string');
  expect(r.body.error.message.length).toBeGreaterThan(0);
}

describe('HTTP envelope and error contract', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(() => s.stop());

  it('wraps success in {data, error:null, meta:{requestId, timestamp}}', async () => {
    const r = await s.call('GET', '/keys');
    expect(r.status).toBe(200);
    expectEnvelope(r.body);
    expect(r.body.error).toBeNull();
    expect(r.headers.get('content-type')).toContain('application/json');
  });

  it('gives every response its own request id', async () => {
    const a = await s.call('GET', '/');
    const b = await s.call('GET', '/');
    expect(a.body.meta.requestId).not.toBe(b.body.meta.requestId);
  });

  it('answers unknown routes with a 404 envelope, inside and outside /v1', async () => {
    expectError(await s.call('GET', '/no-such-thing'), 404, 'NOT_FOUND');
    const outside = await fetch(`${s.url.replace(/\/v1$/, '')}/elsewhere`);
    expectError({ status: outside.status, body: await outside.json() }, 404, 'NOT_FOUND');
  });

  it('answers a known path with an unsupported method with 405 and Allow', async () => {
    const r = await s.call('PUT', '/keys');
    expectError(r, 405, 'METHOD_NOT_ALLOWED');
    expect(r.headers.get('allow')).toContain('GET');
  });

  it('rejects malformed JSON with 400 BAD_REQUEST', async () => {
    const r = await s.call('POST', '/keys', {
      rawBody: '{"name": ',
      headers: { 'content-type': 'application/json' },
    });
    expectError(r, 400, 'BAD_REQUEST');
  });

  it('rejects schema violations with 400 VALIDATION_ERROR naming each bad field path', async () => {
    const r = await s.call('POST', '/keys', { body: { name: '', scopes: ['nope'], expiresAt: 'tomorrow' } });
    expectError(r, 400, 'VALIDATION_ERROR');
    const paths = r.body.error.details.issues.map((i: any) => i.path);
    expect(paths).toEqual(expect.arrayContaining(['body.name', 'body.scopes.0', 'body.expiresAt']));
  });

  it('requires a body where one is expected', async () => {
    const r = await s.call('POST', '/keys');
    expectError(r, 400, 'VALIDATION_ERROR');
    expect(r.body.error.details.issues[0].path).toBe('body');
  });

  it('rejects bodies over 1 MiB with 413 PAYLOAD_TOO_LARGE', async () => {
    const big = JSON.stringify({ name: 'x'.repeat(1024 * 1024) });
    const r = await s.call('POST', '/keys', {
      rawBody: big,
      headers: { 'content-type': 'application/json' },
    });
    expectError(r, 413, 'PAYLOAD_TOO_LARGE');
  });

  it('accepts a body just under 1 MiB (then validates it)', async () => {
    const r = await s.call('POST', '/keys', {
      rawBody: JSON.stringify({ name: 'x'.repeat(1000 * 1000) }),
      headers: { 'content-type': 'application/json' },
    });
    expectError(r, 400, 'VALIDATION_ERROR');
  });

  it('answers 401 with a WWW-Authenticate challenge naming the resource metadata', async () => {
    const r = await s.call('GET', '/keys', { key: null });
    expectError(r, 401, 'UNAUTHORIZED');
    expect(r.headers.get('www-authenticate')).toBe(
      `Bearer resource_metadata="${s.url}/.well-known/oauth-protected-resource"`,
    );
  });
});
