import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ActionAttempt, deliverAction, parseActionConfig } from '../../shared/workflows/actions';
import type { WebhookActionConfig } from '../../shared/workflows/actions/config';
import type { DeliverInput, StepOutput } from '../../shared/workflows/actions/types';
import { type HttpsReceiver, startHttpsReceiver } from '../support/https-receiver';
import { startTestServer, type TestServer } from '../support/server';

/**
 * Webhook delivery against real HTTPS receivers on loopback (LOUPE_OUTBOUND_TEST_HOSTS maps their
 * hostnames), through the real outbound module and a real stored credential. The local runtime is
 * started in this process, so deliverAction uses the same configuration and store.
 */

let server: TestServer;
let receiver: HttpsReceiver;
let other: HttpsReceiver;
let orgId: string;
let credentialId: string;
const TOKEN = 'tok_live_9f8e7d6c5b4a3210-SECRET';

beforeAll(async () => {
  receiver = await startHttpsReceiver();
  other = await startHttpsReceiver();
  server = await startTestServer({
    env: { LOUPE_OUTBOUND_TEST_HOSTS: [receiver.testHostEntry, other.testHostEntry].join(',') },
  });
  orgId = server.app.orgId;
  const res = await server.call('POST', '/workflow-credentials', {
    body: {
      name: 'receiver bearer',
      kind: 'BEARER',
      allowedHosts: [receiver.hostname],
      config: { token: TOKEN },
    },
  });
  expect(res.status, res.text).toBe(201);
  credentialId = res.body.data.id;
});

afterAll(async () => {
  await server?.stop();
  await receiver?.close();
  await other?.close();
});

const steps: StepOutput[] = [
  {
    name: 'orders',
    columns: ['id', 'customer'],
    rows: [
      { id: 1, customer: 'Ada "quotes" \\ back' },
      { id: 2, customer: '</script>\n\u2028日本' },
      { id: 3, customer: "\u0000nul \ud800 lone {{run.id}} \r\n\t'single' 😀", extra: null },
    ],
    rowCount: 3,
  },
];

async function config(over: Record<string, unknown> = {}, target = receiver): Promise<WebhookActionConfig> {
  return (await parseActionConfig(
    orgId,
    'WEBHOOK',
    {
      version: 2,
      url: `${target.url}/hooks/loupe?x=1#frag`,
      method: 'POST',
      bodyMode: 'JSON',
      bodyTemplate:
        '{"workflow": "{{workflow.name}}", "count": {{query_1.row_count}}, "rows": {{query_1.rows}}}',
      retry: { maxAttempts: 3, baseDelayMs: 100 },
      ...over,
    },
    'body.actions.0.config',
  )) as WebhookActionConfig;
}

function input(cfg: WebhookActionConfig, attempts: ActionAttempt[], deadlineMs = 60_000): DeliverInput {
  return {
    orgId,
    userId: server.app.adminUserId,
    runId: '11111111-2222-4333-8444-555555555555',
    workflow: { id: 'wf1', name: 'Orders "EU"' },
    scheduledFor: '2026-11-22T14:00:00.000Z',
    steps,
    action: { id: 'act1', order: 2, type: 'WEBHOOK', config: cfg },
    deadline: Date.now() + deadlineMs,
    onAttempt: async (a) => {
      attempts.push(a);
    },
  };
}

/** The final record of each attempt (onAttempt is called at start and at end). */
const finals = (attempts: ActionAttempt[]) => attempts.filter((a) => a.status !== 'RUNNING');

describe('webhook delivery', () => {
  it('sends the rendered JSON with the credential applied; the attempt stores no secret and no body', async () => {
    receiver.requests.length = 0;
    receiver.setHandler((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'x-request-id': 'rq-1', 'set-cookie': 'a=b' });
      res.end('{"ok":true}');
    });
    const attempts: ActionAttempt[] = [];
    const out = await deliverAction(
      input(
        await config({
          credentialId,
          headers: [
            { name: 'X-Team', value: 'data' },
            { name: 'User-Agent', value: 'custom/1' },
          ],
        }),
        attempts,
      ),
    );
    expect(out.success).toBe(true);
    expect(receiver.requests).toHaveLength(1);
    const req = receiver.requests[0];
    expect(req.method).toBe('POST');
    expect(req.url).toBe('/hooks/loupe?x=1');
    expect(req.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(req.headers['x-team']).toBe('data');
    expect(req.headers['user-agent']).toBe('custom/1');
    expect(req.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(JSON.parse(req.body)).toEqual({ workflow: 'Orders "EU"', count: 3, rows: steps[0].rows });

    expect(attempts.map((a) => a.status)).toEqual(['RUNNING', 'SUCCESS']);
    const a = attempts[1];
    expect(a).toMatchObject({
      runId: '11111111-2222-4333-8444-555555555555',
      actionId: 'act1',
      actionOrder: 2,
      attempt: 1,
      method: 'POST',
      url: `${receiver.url}/hooks/loupe`,
      statusCode: 200,
      requestBodyBytes: Buffer.byteLength(req.body),
      responseBody: '{"ok":true}',
      error: null,
    });
    expect(JSON.parse(a.responseHeaders!)).toEqual({
      'content-type': 'application/json',
      'x-request-id': 'rq-1',
      date: expect.any(String),
    });
    const stored = JSON.stringify(attempts) + JSON.stringify(out.summary);
    expect(stored).not.toContain(TOKEN);
    expect(stored).not.toContain('Orders \\"EU\\"');
    expect(stored).not.toContain('x=1');
  });

  it('FORM_URLENCODED, RAW and GET without a body', async () => {
    receiver.requests.length = 0;
    receiver.setHandler((_req, res) => {
      res.writeHead(204);
      res.end();
    });
    const form: ActionAttempt[] = [];
    await deliverAction(
      input(
        await config({
          bodyMode: 'FORM_URLENCODED',
          bodyTemplate: 'name={{workflow.name}}&rows={{query_1.rows}}&at={{run.scheduledFor}}',
        }),
        form,
      ),
    );
    const raw: ActionAttempt[] = [];
    await deliverAction(
      input(
        await config({
          method: 'PUT',
          bodyMode: 'RAW',
          contentType: 'text/csv',
          bodyTemplate: 'n,{{query_1.row_count}}\n',
        }),
        raw,
      ),
    );
    const get: ActionAttempt[] = [];
    await deliverAction(input(await config({ method: 'GET', bodyMode: 'NONE', bodyTemplate: null }), get));
    const [f, r, g] = receiver.requests;
    expect(f.headers['content-type']).toBe('application/x-www-form-urlencoded');
    const p = new URLSearchParams(f.body);
    expect(p.get('name')).toBe('Orders "EU"');
    expect(JSON.parse(p.get('rows')!)).toEqual(steps[0].rows);
    expect(p.get('at')).toBe('2026-11-22T14:00:00.000Z');
    expect([r.method, r.headers['content-type'], r.body]).toEqual(['PUT', 'text/csv', 'n,3\n']);
    expect([g.method, g.body, g.headers['content-type']]).toEqual(['GET', '', undefined]);
    expect(finals(get)[0]).toMatchObject({
      status: 'SUCCESS',
      statusCode: 204,
      requestBodyBytes: 0,
      method: 'GET',
    });
    expect(finals(raw)[0].requestBodyBytes).toBe(4);
  });

  it('retries after 500 with backoff, then succeeds; every attempt recorded', async () => {
    receiver.requests.length = 0;
    let n = 0;
    receiver.setHandler((_req, res) => {
      n += 1;
      res.writeHead(n < 3 ? 500 : 200, { 'content-type': 'text/plain' });
      res.end(n < 3 ? `boom ${n}` : 'done');
    });
    const attempts: ActionAttempt[] = [];
    const out = await deliverAction(input(await config(), attempts));
    expect(out.success).toBe(true);
    expect(receiver.requests).toHaveLength(3);
    const f = finals(attempts);
    expect(f.map((a) => [a.attempt, a.status, a.statusCode, a.responseBody])).toEqual([
      [1, 'FAILED', 500, 'boom 1'],
      [2, 'FAILED', 500, 'boom 2'],
      [3, 'SUCCESS', 200, 'done'],
    ]);
    expect(new Set(attempts.map((a) => a.id)).size).toBe(3);
    // Backoff: at least half of base·2^(n-1) between attempts (100 ms base: ≥50 ms, then ≥100 ms).
    const at = receiver.requests.map((r) => r.at);
    expect(at[1] - at[0]).toBeGreaterThanOrEqual(50);
    expect(at[2] - at[1]).toBeGreaterThanOrEqual(100);
    expect(out.summary).toMatchObject({ attempts: 3, statusCode: 200, success: true });
  });

  it('successStatusCodes are honoured: 200 fails when only 202 counts, and a 4xx is not retried', async () => {
    receiver.setHandler((_req, res) => {
      res.writeHead(200);
      res.end('ok');
    });
    const attempts: ActionAttempt[] = [];
    const out = await deliverAction(input(await config({ successStatusCodes: [202] }), attempts));
    expect(out.success).toBe(false);
    expect(finals(attempts)).toHaveLength(1);
    expect(out.error).toMatch(/HTTP 200 is not a success status \(expected 202\)/);

    receiver.setHandler((_req, res) => {
      res.writeHead(202);
      res.end();
    });
    const ok: ActionAttempt[] = [];
    expect((await deliverAction(input(await config({ successStatusCodes: [202] }), ok))).success).toBe(true);

    receiver.setHandler((_req, res) => {
      res.writeHead(404);
      res.end('no such hook');
    });
    const nf: ActionAttempt[] = [];
    const out404 = await deliverAction(input(await config(), nf));
    expect(out404.success).toBe(false);
    expect(finals(nf).map((a) => a.statusCode)).toEqual([404]);
  });

  it('a redirect is not followed: the 3xx is the (failed) response, its Location stored without query', async () => {
    receiver.requests.length = 0;
    receiver.setHandler((_req, res) => {
      res.writeHead(302, { location: '/moved/here?token=abc#x' });
      res.end();
    });
    const attempts: ActionAttempt[] = [];
    const out = await deliverAction(input(await config(), attempts));
    expect(out.success).toBe(false);
    expect(receiver.requests).toHaveLength(1);
    expect(finals(attempts)).toHaveLength(1);
    expect(JSON.parse(finals(attempts)[0].responseHeaders!).location).toBe(`${receiver.url}/moved/here`);
  });

  it('a non-critical action reports critical: false when it fails', async () => {
    receiver.setHandler((_req, res) => {
      res.writeHead(503, { 'retry-after': '0' });
      res.end();
    });
    const attempts: ActionAttempt[] = [];
    const out = await deliverAction(
      input(await config({ critical: false, retry: { maxAttempts: 2, baseDelayMs: 100 } }), attempts),
    );
    expect(out).toMatchObject({ success: false, critical: false });
    expect(finals(attempts).map((a) => a.statusCode)).toEqual([503, 503]);
    expect(out.summary).toMatchObject({ critical: false, success: false, attempts: 2 });
  });

  it('timeout: a receiver that never answers fails each attempt after timeoutMs', async () => {
    receiver.setHandler(() => {
      /* never answers */
    });
    const attempts: ActionAttempt[] = [];
    const out = await deliverAction(
      input(await config({ timeoutMs: 1000, retry: { maxAttempts: 2, baseDelayMs: 100 } }), attempts),
    );
    expect(out.success).toBe(false);
    const f = finals(attempts);
    expect(f).toHaveLength(2);
    for (const a of f) {
      expect(a.error).toMatch(/TIMEOUT/);
      expect(a.statusCode).toBeNull();
      // Never shorter than its timeout (load can only lengthen it; a missing timeout would hang the test).
      expect(a.durationMs!).toBeGreaterThanOrEqual(900);
    }
  });

  it('the run deadline bounds attempts and waits', async () => {
    receiver.setHandler((_req, res) => {
      res.writeHead(500);
      res.end();
    });
    const attempts: ActionAttempt[] = [];
    // Without the deadline the retry waits alone would be 5 + 10 + 20 + 40 s, past the test's timeout.
    const given = input(await config({ retry: { maxAttempts: 5, baseDelayMs: 5000 } }), attempts, 4000);
    const out = await deliverAction(given);
    expect(out.success).toBe(false);
    expect(finals(attempts).length).toBeLessThan(5);
    // No attempt was started after the deadline (the deliverer's own decision, not a measured duration).
    for (const a of attempts) expect(Date.parse(a.startedAt)).toBeLessThanOrEqual(given.deadline);
    expect(out.error).toMatch(/run deadline/);
  });

  it('redacts the credential from a receiver that echoes the Authorization header', async () => {
    receiver.setHandler((req, res) => {
      const auth = String(req.headers.authorization);
      res.writeHead(500, { 'content-type': 'text/plain', 'x-request-id': auth });
      res.end(`you sent ${auth} and ${Buffer.from(auth).toString('base64')} ${auth.slice(7)}`);
    });
    const attempts: ActionAttempt[] = [];
    const out = await deliverAction(
      input(await config({ credentialId, retry: { maxAttempts: 1, baseDelayMs: 100 } }), attempts),
    );
    expect(out.success).toBe(false);
    const stored = JSON.stringify(attempts) + JSON.stringify(out);
    expect(stored).not.toContain(TOKEN);
    expect(attempts[1].responseBody).toMatch(/^you sent Bearer /);
  });

  it('the credential is refused for a host outside its allowedHosts: nothing is sent', async () => {
    other.requests.length = 0;
    const attempts: ActionAttempt[] = [];
    const out = await deliverAction(input(await config({ credentialId }, other), attempts));
    expect(out.success).toBe(false);
    expect(other.requests).toHaveLength(0);
    expect(other.connections).toBe(0);
    expect(finals(attempts)).toHaveLength(1);
    expect(finals(attempts)[0].error).toMatch(/^Not sent: /);
  });
});
