import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkDestination, checkUrl, OutboundRefused, sendOutbound } from '../../shared/outbound';
import { resetConfig } from '../../shared/platform/config';
import { type HttpReceiver, startHttpReceiver } from '../support/http-receiver';
import { startTestServer, type TestServer } from '../support/server';

/**
 * LOUPE_DEV_ALLOW_LOOPBACK_HTTP: plain http:// to this machine's loopback, for development only. Admitted
 * locally when set; refused when unset, in the aws runtime and inside Lambda; never opens anything else.
 * A refusal is checked against a receiver of its own (a fresh port no other code knows), so a refusal
 * that still connected would show as a connection there, whatever else the machine is doing; the shared
 * receiver `rx` also gets the server's background event deliveries, so it is only read by path.
 */
const VARS = ['LOUPE_DEV_ALLOW_LOOPBACK_HTTP', 'LOUPE_RUNTIME', 'AWS_LAMBDA_FUNCTION_NAME'] as const;
const saved = Object.fromEntries(VARS.map((k) => [k, process.env[k]]));
const setEnv = (env: Partial<Record<(typeof VARS)[number], string | undefined>>) => {
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  resetConfig();
};

let rx: HttpReceiver;
beforeAll(async () => {
  rx = await startHttpReceiver();
});
afterAll(async () => {
  setEnv(saved);
  await rx?.close();
});

const send = (url: string) => sendOutbound({ url, method: 'POST', body: '{"x":1}', timeoutMs: 5000 });

/** Runs `fn` with a receiver of its own, then asserts that nothing connected to it. */
async function untouched<T>(label: string, fn: (trap: HttpReceiver) => Promise<T>): Promise<T> {
  const trap = await startHttpReceiver();
  try {
    const out = await fn(trap);
    expect(trap.connections, `${label}: a connection was opened`).toBe(0);
    expect(trap.requests, label).toEqual([]);
    return out;
  } finally {
    await trap.close();
  }
}

/** `url` (with `{port}` standing for a fresh receiver's port) is refused by every check, and nothing connects. */
function refused(template: string): Promise<OutboundRefused> {
  return untouched(template, async (trap) => {
    const url = template.replaceAll('{port}', String(trap.port));
    expect(() => checkUrl(url), url).toThrow(OutboundRefused);
    await expect(checkDestination(url), url).rejects.toBeInstanceOf(OutboundRefused);
    const err = await send(url).catch((e) => e);
    expect(err, url).toBeInstanceOf(OutboundRefused);
    return err;
  });
}

describe('the outbound module', () => {
  it('set locally: loopback over http is delivered (127.0.0.1 and localhost, any port)', async () => {
    setEnv({
      LOUPE_DEV_ALLOW_LOOPBACK_HTTP: 'true',
      LOUPE_RUNTIME: 'local',
      AWS_LAMBDA_FUNCTION_NAME: undefined,
    });
    for (const url of [`${rx.url}/a?x=1`, `http://localhost:${rx.port}/b`]) {
      await checkDestination(url);
      const res = await send(url);
      expect(res.status, url).toBe(200);
      expect(res.body).toBe('{"ok":true}');
    }
    expect(rx.requests.slice(-2).map((r) => [r.method, r.url, r.body])).toEqual([
      ['POST', '/a?x=1', '{"x":1}'],
      ['POST', '/b', '{"x":1}'],
    ]);
  });

  it('unset, or set to false: loopback http is refused as before', async () => {
    for (const value of [undefined, 'false']) {
      setEnv({ LOUPE_DEV_ALLOW_LOOPBACK_HTTP: value, LOUPE_RUNTIME: 'local' });
      expect((await refused('http://127.0.0.1:{port}/hook')).reason).toBe('only https URLs are allowed');
    }
  });

  it('ignored in the aws runtime and inside Lambda: refused, nothing opened', async () => {
    setEnv({ LOUPE_DEV_ALLOW_LOOPBACK_HTTP: 'true', LOUPE_RUNTIME: 'aws' });
    await refused('http://127.0.0.1:{port}/hook');
    await refused('http://localhost:{port}/hook');
    setEnv({ LOUPE_RUNTIME: 'local', AWS_LAMBDA_FUNCTION_NAME: 'loupe-webhooks' });
    await refused('http://127.0.0.1:{port}/hook');
  });

  it('set locally: every other http:// destination and the https rules still refuse', async () => {
    setEnv({
      LOUPE_DEV_ALLOW_LOOPBACK_HTTP: 'true',
      LOUPE_RUNTIME: 'local',
      AWS_LAMBDA_FUNCTION_NAME: undefined,
    });
    const p = '{port}';
    const table = [
      `http://10.0.0.1:${p}/`, // private
      `http://192.168.1.10/`,
      `http://169.254.169.254/latest/meta-data/`, // metadata
      `http://[fd00:ec2::254]/`,
      `http://0.0.0.0:${p}/`, // unspecified
      `http://[::]:${p}/`,
      `http://[::ffff:127.0.0.1]:${p}/`, // an IPv4-mapped form is not a loopback literal
      `http://8.8.8.8/`, // public, but plain http
      `http://example.com/`,
      `http://localhost.example.com:${p}/`,
      `http://sub.localhost:${p}/`,
      `http://user:pw@127.0.0.1:${p}/`, // userinfo
      `http://:@127.0.0.1:${p}/`,
      `https://127.0.0.1:${p}/`, // https keeps its rule: loopback is not public, port 443 only
      `https://localhost/`,
      `ftp://127.0.0.1:${p}/`,
    ];
    for (const url of table) await refused(url);
  });
});

describe('through the API (local server with the setting on)', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ env: { LOUPE_DEV_ALLOW_LOOPBACK_HTTP: 'true', LOUPE_DEMO_DATA: 'true' } });
  });
  afterAll(async () => {
    await s?.stop();
  });

  it('announces the setting at start', () => {
    expect(s.logs.join('\n')).toContain('LOUPE_DEV_ALLOW_LOOPBACK_HTTP=true (development only)');
  });

  it('an event webhook to a local http receiver gets a signed test event; turned off, nothing is sent', async () => {
    const created = await s.call('POST', '/webhooks', { body: { url: `${rx.url}/events`, events: ['*'] } });
    expect(created.status, created.text).toBe(201);
    const { id, secret } = created.body.data;
    const t = await s.call('POST', `/webhooks/${id}/test`);
    expect(t.status, t.text).toBe(200);
    expect(t.body.data).toMatchObject({ success: true, delivery: { status: 'SUCCESS', statusCode: 200 } });
    const req = rx.requests.find((r) => r.headers['webhook-id'] === t.body.data.delivery.eventId)!;
    const payload = new Webhook(secret).verify(req.body, req.headers as Record<string, string>) as any;
    expect(payload).toMatchObject({ type: 'webhook.test', data: { endpointId: id } });

    // Turned off: the test event is not sent. The endpoint's own events ("*") may still be arriving from
    // earlier work, so the check is on what this call did: the delivery it reports never reached the receiver.
    setEnv({ LOUPE_DEV_ALLOW_LOOPBACK_HTTP: 'false' });
    try {
      const again = await s.call('POST', `/webhooks/${id}/test`);
      expect(again.status, again.text).toBe(200);
      expect(again.body.data).toMatchObject({ success: false, delivery: { status: 'FAILED' } });
      const eventId = again.body.data.delivery.eventId;
      expect(eventId).toEqual(expect.any(String));
      expect(rx.requests.filter((r) => r.headers['webhook-id'] === eventId)).toEqual([]);
      // A new endpoint on this machine is refused, and its address never sees a connection.
      await untouched('create while off', async (trap) => {
        const refusedCreate = await s.call('POST', '/webhooks', {
          body: { url: `${trap.url}/x`, events: ['*'] },
        });
        expect(refusedCreate.status).toBe(400);
        expect(refusedCreate.body.error.details.issues[0].path).toBe('body.url');
      });
    } finally {
      setEnv({ LOUPE_DEV_ALLOW_LOOPBACK_HTTP: 'true' });
    }
  });

  it('a workflow webhook action to a local http receiver is delivered by an action test', async () => {
    const conns = await s.call('GET', '/connections');
    const demo = conns.body.data.find((c: any) => c.name === 'Demo SaaS (SQLite)');
    const wf = await s.call('POST', '/workflows', {
      body: {
        name: 'Local hook',
        triggerType: 'MANUAL',
        connectionId: demo.id,
        steps: [{ name: 'plans', query: 'SELECT count(*) AS n FROM plans LIMIT 1' }],
        actions: [
          {
            type: 'WEBHOOK',
            order: 0,
            config: { version: 2, url: `${rx.url}/wf`, method: 'POST', bodyMode: 'JSON' },
          },
        ],
      },
    });
    expect(wf.status, wf.text).toBe(201);
    const run = await s.call('POST', `/workflows/${wf.body.data.id}/actions/0/test`, {
      body: { confirmDelivery: true },
    });
    expect(run.status, run.text).toBe(201);
    const got = rx.requests.filter((r) => r.url === '/wf');
    expect(got).toHaveLength(1);
    expect(JSON.parse(got[0].body)).toMatchObject({ workflow: { name: 'Local hook' } });
  });

  it('hostile destinations are still 400 on both endpoints, and nothing is opened', async () => {
    const conns = await s.call('GET', '/connections');
    const demo = conns.body.data.find((c: any) => c.name === 'Demo SaaS (SQLite)');
    await untouched('hostile webhook URLs', async (trap) => {
      for (const url of ['http://10.0.0.1/', `http://user@127.0.0.1:${trap.port}/`, 'http://example.com/']) {
        const r = await s.call('POST', '/webhooks', { body: { url, events: ['*'] } });
        expect(r.status, url).toBe(400);
        expect(r.body.error.code).toBe('VALIDATION_ERROR');
        const w = await s.call('POST', '/workflows', {
          body: {
            name: 'Hostile hook',
            triggerType: 'MANUAL',
            connectionId: demo.id,
            steps: [{ name: 'plans', query: 'SELECT count(*) AS n FROM plans LIMIT 1' }],
            actions: [
              { type: 'WEBHOOK', order: 0, config: { version: 2, url, method: 'POST', bodyMode: 'JSON' } },
            ],
          },
        });
        expect(w.status, `${url}: ${w.text}`).toBe(400);
        expect(w.body.error.code).toBe('VALIDATION_ERROR');
      }
    });
  });
});
