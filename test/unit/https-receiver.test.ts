import { request } from 'node:https';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HttpsReceiver, startHttpsReceiver } from '../support/https-receiver';

describe('the local HTTPS test receiver', () => {
  let r: HttpsReceiver;
  beforeAll(async () => {
    r = await startHttpsReceiver();
  });
  afterAll(() => r.close());

  it('is trusted through NODE_EXTRA_CA_CERTS with normal hostname verification, on port 443', async () => {
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(
        {
          host: r.ip,
          port: 443,
          servername: r.hostname,
          path: '/hook',
          method: 'POST',
          headers: { host: r.hostname },
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        },
      );
      req.on('error', reject);
      req.end('hello');
    });
    expect(status).toBe(200);
    expect(r.requests).toHaveLength(1);
    expect(r.requests[0]).toMatchObject({ method: 'POST', url: '/hook', body: 'hello' });
  });

  it('fails verification for a name outside its certificate', async () => {
    const err = await new Promise<Error>((resolve) => {
      const req = request({ host: r.ip, port: 443, servername: 'example.com', path: '/' }, () =>
        resolve(new Error('connected')),
      );
      req.on('error', resolve);
      req.end();
    });
    expect(String(err)).toMatch(/altnames|Hostname/i);
  });
});
