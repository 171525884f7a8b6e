import { validate } from '@readme/openapi-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/server';

describe('discovery: GET /, OpenAPI and protected resource metadata', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(() => s.stop());

  it('describes the calling key on GET /', async () => {
    const r = await s.call('GET', '/');
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual({
      version: '1.0.0',
      authenticationMethod: 'api_key',
      scopes: ['*'],
      openapi: `${s.url}/openapi.json`,
      resourceMetadata: `${s.url}/.well-known/oauth-protected-resource`,
      userId: s.app.adminUserId,
      role: 'admin',
    });
    // A member's key says so (the console hides admin-only forms from it).
    const m = await s.call('POST', '/members', {
      body: { email: 'discovery-member@example.com', name: 'M' },
    });
    expect(m.status, m.text).toBe(201);
    const key = (await s.call('POST', `/members/${m.body.data.id}/keys`, { body: { name: 'm' } })).body.data
      .key;
    const mine = await s.call('GET', '/', { key });
    expect(mine.body.data).toMatchObject({ userId: m.body.data.id, role: 'member' });
  });

  it('serves the OpenAPI 3.1 document without a key, and it validates', async () => {
    const res = await fetch(`${s.url}/openapi.json`);
    expect(res.status).toBe(200);
    const doc: any = await res.json();
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.paths['/keys'].post.requestBody).toBeDefined();
    expect(doc.paths['/keys'].get.parameters.map((p: any) => p.name)).toEqual(['page', 'pageSize']);
    const result = await validate(structuredClone(doc));
    expect(result.valid ? [] : result.errors).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it('serves RFC 9728 metadata without a key, under /v1 and at the host root', async () => {
    for (const url of [
      `${s.url}/.well-known/oauth-protected-resource`,
      `${s.url.replace(/\/v1$/, '')}/.well-known/oauth-protected-resource`,
    ]) {
      const res = await fetch(url);
      expect(res.status).toBe(200);
      const doc: any = await res.json();
      expect(doc.resource).toBe(s.url);
      expect(doc.bearer_methods_supported).toEqual(['header']);
      expect(doc.scopes_supported).toContain('admin');
    }
  });

  it('limits GET / to 60 a minute per client with rate headers, then 429 with Retry-After', async () => {
    let last: Awaited<ReturnType<TestServer['call']>> | undefined;
    const first = await s.call('GET', '/');
    const used = 60 - Number(first.headers.get('ratelimit-remaining'));
    expect(first.headers.get('ratelimit-limit')).toBe('60');
    expect(first.headers.get('x-ratelimit-limit')).toBe('60');
    const reset = Number(first.headers.get('ratelimit-reset'));
    expect(reset).toBeGreaterThanOrEqual(1);
    expect(reset).toBeLessThanOrEqual(60);
    for (let i = used; i < 60; i++) last = await s.call('GET', '/');
    expect(last?.status).toBe(200);
    expect(last?.headers.get('ratelimit-remaining')).toBe('0');
    const limited = await s.call('GET', '/');
    // The window may roll over between calls; then the 61st call opens a fresh window.
    if (limited.status === 200) expect(Number(limited.headers.get('ratelimit-remaining'))).toBe(59);
    else {
      expect(limited.status).toBe(429);
      expect(limited.body.error.code).toBe('RATE_LIMITED');
      expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(limited.headers.get('x-ratelimit-remaining')).toBe('0');
    }
  });

  it('counts other routes per organization in the shared store and sends the same headers', async () => {
    const a = await s.call('GET', '/keys');
    const b = await s.call('GET', '/members');
    expect(a.headers.get('ratelimit-limit')).toBe('600');
    expect(Number(b.headers.get('ratelimit-remaining'))).toBeLessThan(
      Number(a.headers.get('ratelimit-remaining')),
    );
  });
});
