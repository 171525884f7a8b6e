import type { APIGatewayProxyEvent, Context } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { endpoint } from '../../shared/http/endpoint';
import { httpHandler } from '../../shared/http/handler';
import { routePath } from '../../shared/http/middleware/router';
import { on } from '../../shared/http/route';
import { resetConfig } from '../../shared/platform/config';
import { AppError } from '../../shared/platform/errors';

const event = (path: string, method = 'GET', body: string | null = null) =>
  ({
    path,
    httpMethod: method,
    headers: { host: 'api.example.com' },
    body,
    isBase64Encoded: false,
    queryStringParameters: null,
    requestContext: { stage: 'v1', identity: { sourceIp: '203.0.113.9' } },
  }) as unknown as APIGatewayProxyEvent;

const handler = httpHandler([
  on(endpoint({ method: 'GET', path: '/boom', tag: 't', summary: 's', auth: 'none' }), async () => {
    throw new Error('secret internals: password=hunter2');
  }),
  on(endpoint({ method: 'GET', path: '/teapot', tag: 't', summary: 's', auth: 'none' }), async () => {
    throw new AppError(418, 'TEAPOT', 'short and stout', { spout: true });
  }),
  on(
    endpoint({
      method: 'POST',
      path: '/things/{id}',
      tag: 't',
      summary: 's',
      auth: 'none',
      params: z.object({ id: z.uuid() }),
      body: z.object({ n: z.number().int() }),
    }),
    async ({ params, body }) => ({ status: 201, data: { id: params.id, n: body.n } }),
  ),
  on(
    endpoint({ method: 'GET', path: '/slow', tag: 't', summary: 's', auth: 'none' }),
    async ({ remainingMs }) => {
      seenRemaining.push(remainingMs());
      await new Promise(() => {}); // never answers: only the request's deadline ends it
      return { data: null };
    },
  ),
]);
const seenRemaining: number[] = [];
const ctx = {} as Context;

describe('the HTTP middleware stack', () => {
  it('turns an unexpected error into 500 INTERNAL_ERROR without internals', async () => {
    const res = await handler(event('/boom'), ctx);
    expect(res.statusCode).toBe(500);
    const body = JSON.parse(res.body);
    expect(body.error.code).toBe('INTERNAL_ERROR');
    expect(res.body).not.toContain('hunter2');
    expect(res.body).not.toContain('secret internals');
    expect(body.data).toBeNull();
  });

  it('answers 504 REQUEST_TIMEOUT before the deadline of a route that does not finish (never 500)', async () => {
    // The function has 60 s left, but API Gateway's 29 s from arrival leave 1.2 s: the route sees the
    // smaller, and is answered with the envelope just before it.
    const arrived = Date.now() - 27_800;
    const e = {
      ...event('/slow'),
      requestContext: { ...event('/slow').requestContext, requestTimeEpoch: arrived },
    };
    const res = await handler(
      e as APIGatewayProxyEvent,
      { getRemainingTimeInMillis: () => 60_000 } as Context,
    );
    expect(res.statusCode).toBe(504);
    expect(JSON.parse(res.body).error.code).toBe('REQUEST_TIMEOUT');
    expect(seenRemaining.at(-1)).toBeLessThanOrEqual(1200);
    // The function's own remaining time counts too (a streaming group has no gateway limit).
    const fn = await handler(event('/slow'), { getRemainingTimeInMillis: () => 1100 } as Context);
    expect(fn.statusCode).toBe(504);
    expect(seenRemaining.at(-1)).toBeLessThanOrEqual(1100);
  });

  it('passes typed errors through with their status, code and details', async () => {
    const res = await handler(event('/teapot'), ctx);
    expect(res.statusCode).toBe(418);
    expect(JSON.parse(res.body).error).toEqual({
      code: 'TEAPOT',
      message: 'short and stout',
      details: { spout: true },
    });
  });

  it('validates path parameters and bodies and serves the validated values', async () => {
    const bad = await handler(event('/things/not-a-uuid', 'POST', '{"n": 1.5}'), ctx);
    expect(bad.statusCode).toBe(400);
    const paths = JSON.parse(bad.body).error.details.issues.map((i: any) => i.path);
    expect(paths).toEqual(['params.id', 'body.n']);
    const id = '1b4e28ba-2fa1-41d2-883f-0016d3cca427';
    const ok = await handler(event(`/things/${id}`, 'POST', '{"n": 2}'), ctx);
    expect(ok.statusCode).toBe(201);
    expect(JSON.parse(ok.body).data).toEqual({ id, n: 2 });
  });

  it('decodes base64 bodies', async () => {
    const id = '1b4e28ba-2fa1-41d2-883f-0016d3cca427';
    const e = {
      ...event(`/things/${id}`, 'POST', Buffer.from('{"n": 3}').toString('base64')),
      isBase64Encoded: true,
    };
    const ok = await handler(e, ctx);
    expect(JSON.parse(ok.body).data.n).toBe(3);
  });
});

describe('routing under a custom domain base path', () => {
  it('strips LOUPE_BASE_PATH before matching, and only as a whole path segment', async () => {
    const before = process.env.LOUPE_BASE_PATH;
    process.env.LOUPE_BASE_PATH = '/loupe';
    resetConfig();
    try {
      const res = await handler(
        event('/loupe/things/6f1c1d1e-8a55-4c52-9a11-1f0e2b9c7d31', 'POST', '{"n":2}'),
        ctx,
      );
      expect(res.statusCode).toBe(201);
      expect(JSON.parse(res.body).data).toEqual({ id: '6f1c1d1e-8a55-4c52-9a11-1f0e2b9c7d31', n: 2 });
      // The same route without the base path (the stage URL) still answers.
      expect((await handler(event('/teapot'), ctx)).statusCode).toBe(418);
      expect((await handler(event('/loupe/teapot/'), ctx)).statusCode).toBe(418);
      // A longer first segment is not the base path.
      expect((await handler(event('/loupeteapot'), ctx)).statusCode).toBe(404);
    } finally {
      if (before === undefined) delete process.env.LOUPE_BASE_PATH;
      else process.env.LOUPE_BASE_PATH = before;
      resetConfig();
    }
  });

  it('routePath keeps the root and trims trailing slashes', () => {
    expect(routePath('/loupe', '/loupe')).toBe('/');
    expect(routePath('/loupe/', '/loupe')).toBe('/');
    expect(routePath('/a/b/', undefined)).toBe('/a/b');
    expect(routePath('', '/x')).toBe('/');
    expect(routePath('/api/loupe/keys', '/api/loupe')).toBe('/keys');
  });
});
