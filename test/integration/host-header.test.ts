/**
 * The Host and X-Forwarded-Proto headers are client input: they never reach WWW-Authenticate or the
 * GET / links unless they are a plain host[:port] and http/https.
 */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validHost } from '../../shared/http/middleware/request-context';
import { startTestServer, type TestServer } from '../support/server';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => {
  await s?.stop();
});

/** A raw HTTP/1.1 request with exactly these headers (fetch would not send a hostile Host). */
const raw = (path: string, headers: Record<string, string>) =>
  new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }>(
    (resolve, reject) => {
      const u = new URL(s.url);
      const req = request(
        {
          host: u.hostname,
          port: u.port,
          path: `${u.pathname}${path}`,
          method: 'GET',
          headers,
          setHost: false,
        },
        (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (d) => {
            body += d;
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
        },
      );
      req.on('error', reject);
      req.end();
    },
  );

describe('Host header', () => {
  const hostile = [
    'evil.example" error="x',
    'evil.example\\"',
    'a b.example',
    '<script>alert(1)</script>',
    'evil.example/path?x=',
    'user@evil.example',
    'evil.example:99999999',
    `${'a'.repeat(300)}.example`,
    '',
  ];
  for (const host of hostile)
    it(`${JSON.stringify(host.slice(0, 40))} is not echoed; the answers use the fallback host`, async () => {
      const unauth = await raw('/connections', { host, 'x-forwarded-proto': 'javascript' });
      expect(unauth.status).toBe(401);
      const www = String(unauth.headers['www-authenticate']);
      expect(www).toMatch(
        /^Bearer resource_metadata="https:\/\/localhost\/v1\/\.well-known\/oauth-protected-resource"$/,
      );
      const index = await raw('/', { host, authorization: `Bearer ${s.adminKey}` });
      expect(index.status).toBe(200);
      if (host) expect(index.body).not.toContain(host);
      expect(index.body).not.toContain('<script>');
      // The local runtime forwards http as the protocol; the host falls back to the gateway's (localhost).
      expect(JSON.parse(index.body).data.openapi).toBe('http://localhost/v1/openapi.json');
    });

  it('a plain host and port, and http, are used as given', async () => {
    const r = await raw('/connections', { host: 'api.example.com:8443', 'x-forwarded-proto': 'http' });
    expect(r.headers['www-authenticate']).toBe(
      'Bearer resource_metadata="http://api.example.com:8443/v1/.well-known/oauth-protected-resource"',
    );
  });

  it('validHost accepts names, IPv4 and bracketed IPv6 with ports, nothing else', () => {
    for (const ok of [
      'localhost',
      'a.b-c.example',
      'x.example:3000',
      '10.0.0.1:80',
      '[::1]:3000',
      'example.com.',
    ])
      expect(validHost(ok), ok).toBe(ok);
    for (const bad of ['a"b', 'a b', 'a/b', 'a@b', '-a.example', 'a..b', '[::1', 'a:b', '', undefined])
      expect(validHost(bad), String(bad)).toBeUndefined();
  });
});
