import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { createOrganization } from '../../shared/auth/bootstrap';
import { fanOutHealthChecks } from '../../shared/connections/health';
import { db } from '../../shared/platform/db/store';
import { encryption } from '../../shared/platform/encryption';
import { type EventType, listEvents, outbox } from '../../shared/platform/events';
import { eventSk } from '../../shared/platform/events/outbox';
import { newId } from '../../shared/platform/ids';
import { LocalQueue } from '../../shared/platform/queue/local';
import { webhookEndpoints } from '../../shared/webhooks/api';
import { handleDeliveryMessage } from '../../shared/webhooks/delivery';
import { ensureDelivery, sweepPendingEvents } from '../../shared/webhooks/fanout';
import { webhookStore } from '../../shared/webhooks/store';
import { createPostgresDatabase, postgresAdmin } from '../support/connections';
import { type HttpsReceiver, type ReceivedRequest, startHttpsReceiver } from '../support/https-receiver';
import { captureOutput } from '../support/output';
import { startTestServer, type TestServer } from '../support/server';
import { sleep, waitFor } from '../support/wait';

/**
 * Event webhooks end to end over real HTTP: the local runtime (its fan-out and delivery workers
 * polling the durable local queue) delivers to a real HTTPS receiver, and every request the receiver
 * gets is verified with the `standardwebhooks` package against the endpoint's secret.
 */
describe('event webhooks', () => {
  let s: TestServer;
  let rx: HttpsReceiver;
  /** A receiver no endpoint points at: hostile URLs name it, and it must never see a connection. */
  let trap: HttpsReceiver;
  const pg = inject('postgres');
  /** Status codes to answer per path, in order (then 200). */
  const plans = new Map<string, number[]>();
  /** Secrets every delivery to a path must verify with. */
  const secrets = new Map<string, string[]>();
  const verified: Array<{ path: string; payload: any; req: ReceivedRequest }> = [];
  const failures: string[] = [];
  /** Attempts to /slow still waiting for an answer, and that count whenever a /fast request arrived. */
  let slowOpen = 0;
  const slowOpenAtFast: number[] = [];
  /** Answers to a path wait for this promise. */
  const rxHold = new Map<string, Promise<void>>();
  /** Everything the process writes while the runtime logs at DEBUG (secrets must never appear). */
  const output = captureOutput();

  beforeAll(async () => {
    output.start();
    rx = await startHttpsReceiver(async (req, res) => {
      const path = req.url;
      const keys = secrets.get(path) ?? [];
      if (!keys.length) failures.push(`${path}: no secret known`);
      for (const secret of keys) {
        try {
          const payload = new Webhook(secret).verify(req.body, req.headers as Record<string, string>);
          verified.push({ path, payload, req });
        } catch (e) {
          failures.push(`${path}: ${(e as Error).message}`);
        }
      }
      if (path === '/fast') slowOpenAtFast.push(slowOpen);
      if (path === '/slow') {
        // Never answers: the sender's attempt timeout ends it (closing the connection).
        slowOpen++;
        res.on('close', () => slowOpen--);
        return;
      }
      const hold = rxHold.get(path);
      if (hold) await hold;
      const status = plans.get(path)?.shift() ?? 200;
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(status < 300 ? '{"ok":true}' : '{"error":"planned"}');
    });
    trap = await startHttpsReceiver();
    s = await startTestServer({
      env: {
        LOUPE_OUTBOUND_TEST_HOSTS: `${rx.testHostEntry},${trap.testHostEntry}`,
        LOUPE_WEBHOOK_RETRY_SCALE: '0.02',
        // Long enough that a loaded machine still delivers /fast while /slow hangs (see that test).
        LOUPE_WEBHOOK_TIMEOUT_MS: '8000',
        LOUPE_LOG_LEVEL: 'DEBUG',
      },
    });
  });
  afterAll(async () => {
    output.stop();
    await s?.stop();
    await rx?.close();
    await trap?.close();
  });

  const requestsTo = (path: string) => rx.requests.filter((r) => r.url === path);
  const bodies = (path: string) => requestsTo(path).map((r) => JSON.parse(r.body));
  async function create(path: string, events: string[], over: Record<string, unknown> = {}) {
    const r = await s.call('POST', '/webhooks', { body: { url: `${rx.url}${path}`, events, ...over } });
    expect(r.status, r.text).toBe(201);
    secrets.set(path, [r.body.data.secret]);
    return r.body.data as { id: string; secret: string; url: string; events: string[] };
  }
  const record = (type: EventType, data: unknown) => outbox().record(s.app.orgId, type, data);
  const deliveries = async (id: string, query = '') => {
    const r = await s.call('GET', `/webhooks/${id}/deliveries${query}`);
    expect(r.status, r.text).toBe(200);
    return r.body as { data: any[]; meta: { pagination: any } };
  };

  it('creates an endpoint with the full whsec_ secret once; reads mask it; the store holds it encrypted', async () => {
    const e = await create('/crud', ['schema.updated', 'query.approved']);
    expect(e.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(e.secret.slice(6), 'base64')).toHaveLength(32);
    expect(e).toMatchObject({
      url: `${rx.url}/crud`,
      events: ['schema.updated', 'query.approved'],
      isActive: true,
    });
    const masked = `whsec_…${e.secret.slice(-4)}`;
    const got = await s.call('GET', `/webhooks/${e.id}`);
    expect(got.body.data.secret).toBe(masked);
    const list = await s.call('GET', '/webhooks');
    expect(list.body.data.find((x: any) => x.id === e.id).secret).toBe(masked);
    expect(list.body.meta.pagination).toMatchObject({ page: 1, pageSize: 20 });
    const raw = JSON.stringify(await db.get(`ORG#${s.app.orgId}`, `WEBHOOK#${e.id}`));
    expect(raw).not.toContain(e.secret.slice(6));
    expect(raw).toContain('secretEnc');
    // PATCH without rotation keeps the mask and the secret.
    const patched = await s.call('PATCH', `/webhooks/${e.id}`, { body: { events: ['*'] } });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body.data).toMatchObject({ events: ['*'], secret: masked });
    expect(patched.body.data.updatedAt > (e as any).updatedAt).toBe(true);
  });

  it('guards: every /webhooks route is admin only (403 for a member, nothing changed or sent); another organization gets 404', async () => {
    const e = await create('/guard', ['*']);
    const m = await s.call('POST', '/members', {
      body: { email: `wh-member-${newId()}@example.com`, name: 'M', role: 'member', connectionIds: [] },
    });
    const memberKey = (await s.call('POST', `/members/${m.body.data.id}/keys`, { body: { name: 'k' } })).body
      .data.key;
    const before = JSON.stringify(await webhookStore.list(s.app.orgId));
    const received = rx.requests.length;
    // Every route of the registry under /webhooks, so a new one cannot be missed.
    const routes = webhookEndpoints.map((spec) => [spec.method, spec.path.replace('{id}', e.id)] as const);
    expect(routes.length).toBeGreaterThanOrEqual(7);
    for (const [method, path] of routes) {
      const r = await s.call(method, path, {
        key: memberKey,
        body: method === 'GET' || method === 'DELETE' ? undefined : { url: `${rx.url}/x`, events: ['*'] },
      });
      expect(r.status, `${method} ${path}`).toBe(403);
      expect(r.body.error.code).toBe('FORBIDDEN');
      expect(r.text).not.toContain(e.url);
    }
    expect(JSON.stringify(await webhookStore.list(s.app.orgId))).toBe(before);
    expect(rx.requests.length).toBe(received);
    const noScope = (await s.call('POST', '/keys', { body: { name: 'no webhooks', scopes: ['query'] } })).body
      .data.key;
    expect((await s.call('GET', '/webhooks', { key: noScope })).status).toBe(403);
    const other = await createOrganization({ name: 'Other WH', adminEmail: `wh-${newId()}@other.example` });
    for (const [method, path] of [
      ['GET', `/webhooks/${e.id}`],
      ['PATCH', `/webhooks/${e.id}`],
      ['DELETE', `/webhooks/${e.id}`],
      ['GET', `/webhooks/${e.id}/deliveries`],
      ['POST', `/webhooks/${e.id}/test`],
    ] as const)
      expect(
        (await s.call(method, path, { key: other.key, body: method === 'GET' ? undefined : {} })).status,
        `${method} ${path}`,
      ).toBe(404);
    expect((await s.call('GET', '/webhooks', { key: other.key })).body.data).toEqual([]);
    expect((await s.call('GET', `/webhooks/${e.id}`)).status).toBe(200);
  });

  it('hostile inputs are 4xx in the envelope, create nothing and open no connection', async () => {
    const countBefore = (await webhookStore.list(s.app.orgId)).length;
    const url = (u: string) => ({ url: u, events: ['*'] });
    const cases: Array<[string, unknown]> = [
      ['http scheme', url(`http://${trap.hostname}/x`)],
      ['loopback literal', url('https://127.0.0.1/x')],
      ['localhost', url('https://localhost/x')],
      ['metadata address', url('https://169.254.169.254/latest/meta-data')],
      ['IPv6 loopback', url('https://[::1]/x')],
      ['IPv4-mapped loopback', url('https://[::ffff:127.0.0.1]/x')],
      ['private network', url('https://10.0.0.8/x')],
      ['CGNAT', url('https://100.64.0.1/x')],
      ['decimal IPv4', url('https://2130706433/x')],
      ['hex IPv4', url('https://0x7f000001/x')],
      ['userinfo', url(`https://user:pw@${trap.hostname}/x`)],
      ['port 8443', url(`https://${trap.hostname}:8443/x`)],
      ['not a URL', url('not a url')],
      ['javascript', url('javascript:alert(1)')],
      ['empty URL', url('')],
      ['huge URL', url(`${trap.url}/${'a'.repeat(5000)}`)],
      ['URL not a string', { url: 42, events: ['*'] }],
      ['missing events', { url: `${trap.url}/x` }],
      ['empty events', { url: `${trap.url}/x`, events: [] }],
      ['unknown event', { url: `${trap.url}/x`, events: ['schema.updated', 'db.dropped'] }],
      ['star with others', { url: `${trap.url}/x`, events: ['*', 'schema.updated'] }],
      [
        'huge events list',
        { url: `${trap.url}/x`, events: Array.from({ length: 50_000 }, () => 'schema.updated') },
      ],
      ['events not strings', { url: `${trap.url}/x`, events: [{ $ne: 1 }] }],
      ['events a string', { url: `${trap.url}/x`, events: '*' }],
      ['isActive not boolean', { url: `${trap.url}/x`, events: ['*'], isActive: 'yes' }],
      ['body an array', [{ url: `${trap.url}/x`, events: ['*'] }]],
      ['unknown field', { url: `${trap.url}/x`, events: ['*'], secret: 'mine' }],
      ['?token=', url(`${trap.url}/x?token=abc`)],
      ['?access_token=', url(`${trap.url}/x?access_token=abc`)],
      ['?api_key=', url(`${trap.url}/x?a=1&api_key=abc`)],
      ['?sig=', url(`${trap.url}/x?sig=abc`)],
      ['?X-Amz-Signature=', url(`${trap.url}/x?X-Amz-Signature=abc`)],
    ];
    for (const [name, body] of cases) {
      const r = await s.call('POST', '/webhooks', { body });
      expect([400, 413], `${name}: ${r.text.slice(0, 300)}`).toContain(r.status);
      if (name.startsWith('?')) {
        expect(r.body.error.details.issues[0].path, name).toBe('body.url');
        expect(r.body.error.message, name).toContain('secret in its query string');
      }
      expect(r.body.data, name).toBeNull();
      expect(r.body.error.code, name).toMatch(/^(VALIDATION_ERROR|BAD_REQUEST|PAYLOAD_TOO_LARGE)$/);
    }
    const bad = await s.call('POST', '/webhooks', {
      rawBody: '{"url":',
      headers: { 'content-type': 'application/json' },
    });
    expect(bad.status).toBe(400);
    // PATCH: a changed URL is checked again; refused changes leave the endpoint as it was.
    const e = await create('/hostile', ['*']);
    for (const u of [
      'https://127.0.0.1/x',
      'http://example.com/',
      `https://${trap.hostname}:444/`,
      `${trap.url}/x?access_token=abc`,
    ]) {
      const r = await s.call('PATCH', `/webhooks/${e.id}`, { body: { url: u } });
      expect(r.status, u).toBe(400);
      expect(r.body.error.details.issues[0].path).toBe('body.url');
    }
    expect((await s.call('PATCH', `/webhooks/${e.id}`, { body: { events: ['nope'] } })).status).toBe(400);
    expect((await s.call('PATCH', `/webhooks/${e.id}`, { body: { rotateSecret: 'yes' } })).status).toBe(400);
    expect((await s.call('GET', `/webhooks/${e.id}`)).body.data).toMatchObject({
      url: `${rx.url}/hostile`,
      events: ['*'],
    });
    expect((await webhookStore.list(s.app.orgId)).length).toBe(countBefore + 1);
    // The receiver the hostile URLs named (no endpoint ever pointed at it) saw no connection at all.
    expect(trap.connections).toBe(0);
    expect((await s.call('GET', '/webhooks/nope')).status).toBe(404);
  });

  it('at most 20 endpoints per organization, also when created concurrently; deleting frees a slot', async () => {
    const org = await createOrganization({ name: 'Many WH', adminEmail: `many-${newId()}@example.com` });
    const answers = await Promise.all(
      Array.from({ length: 25 }, (_, i) =>
        s.call('POST', '/webhooks', { key: org.key, body: { url: `${rx.url}/many/${i}`, events: ['*'] } }),
      ),
    );
    expect(answers.filter((a) => a.status === 201)).toHaveLength(20);
    const refused = answers.filter((a) => a.status !== 201);
    expect(refused).toHaveLength(5);
    for (const r of refused) expect(r.body.error.code).toBe('LIMIT_EXCEEDED');
    expect(refused[0].status).toBe(409);
    const list = await s.call('GET', '/webhooks?pageSize=100', { key: org.key });
    expect(list.body.meta.pagination.total).toBe(20);
    const page2 = await s.call('GET', '/webhooks?page=2&pageSize=15', { key: org.key });
    expect(page2.body.data).toHaveLength(5);
    const one = answers.find((a) => a.status === 201)!.body.data.id;
    expect((await s.call('DELETE', `/webhooks/${one}`, { key: org.key })).body.data).toEqual({
      deleted: true,
    });
    expect((await s.call('DELETE', `/webhooks/${one}`, { key: org.key })).status).toBe(404);
    const again = await s.call('POST', '/webhooks', {
      key: org.key,
      body: { url: `${rx.url}/many/x`, events: ['*'] },
    });
    expect(again.status).toBe(201);
    expect(
      (await s.call('POST', '/webhooks', { key: org.key, body: { url: `${rx.url}/many/y`, events: ['*'] } }))
        .status,
    ).toBe(409);
  });

  it('a 503 is retried until the endpoint answers 2xx; every attempt is recorded and signed with the same id', async () => {
    const e = await create('/retry', ['query.approval.requested']);
    plans.set('/retry', [503, 503]);
    const ev = await record('query.approval.requested', { approvalId: 'a1', sql: 'DELETE FROM t' });
    const d = await waitFor('the delivery to succeed', async () => {
      const [first] = (await deliveries(e.id)).data;
      return first?.status === 'SUCCESS' && first;
    });
    expect(d).toMatchObject({
      attempts: 3,
      statusCode: 200,
      event: 'query.approval.requested',
      eventId: ev.id,
    });
    expect(d.deliveredAt).toEqual(expect.any(String));
    const reqs = requestsTo('/retry');
    expect(reqs).toHaveLength(3);
    for (const r of reqs) {
      expect(r.method).toBe('POST');
      expect(r.headers['webhook-id']).toBe(ev.id);
      expect(r.headers['content-type']).toBe('application/json');
    }
    expect(JSON.parse(reqs[0].body)).toEqual({
      id: ev.id,
      type: 'query.approval.requested',
      createdAt: ev.createdAt,
      orgId: s.app.orgId,
      data: { approvalId: 'a1', sql: 'DELETE FROM t' },
    });
    expect(JSON.parse(d.payload)).toEqual(JSON.parse(reqs[0].body));
    expect(verified.filter((v) => v.path === '/retry')).toHaveLength(3);
    // The retry waits follow the (scaled) schedule: about 5 s × 0.02 and 30 s × 0.02, with jitter.
    expect(reqs[1].at - reqs[0].at).toBeGreaterThanOrEqual(80);
    expect(reqs[2].at - reqs[1].at).toBeGreaterThanOrEqual(500);
    // The outbox event is dispatched.
    const stored = (await listEvents(s.app.orgId)).find((x) => x.id === ev.id);
    expect(stored?.status).toBe('dispatched');
  });

  it('408 and 429 are retried too', async () => {
    const e = await create('/busy', ['query.approved']);
    plans.set('/busy', [429, 408]);
    await record('query.approved', { approvalId: 'busy' });
    const d = await waitFor('the delivery to succeed', async () => {
      const [first] = (await deliveries(e.id)).data;
      return first?.status === 'SUCCESS' && first;
    });
    expect(d).toMatchObject({ attempts: 3, statusCode: 200 });
    expect(requestsTo('/busy')).toHaveLength(3);
  });

  it('the eighth attempt is the last: a failure there leaves the delivery FAILED and kept, with nothing queued', async () => {
    const e = await create('/last', ['*']);
    const endpoint = (await webhookStore.get(s.app.orgId, e.id))!;
    const event = {
      id: newId(),
      orgId: s.app.orgId,
      type: 'workflow.run.failed' as const,
      createdAt: new Date().toISOString(),
      data: { runId: 'last' },
    };
    const d = (await ensureDelivery(endpoint, event, { queue: false }))!;
    // As if attempts 1–7 had failed with 503.
    await db.patch(`ORG#${s.app.orgId}#WH#${e.id}`, `SEQ#${String(d.seq).padStart(12, '0')}`, {
      attempts: 7,
      completed: 7,
      statusCode: 503,
    });
    plans.set('/last', [503]);
    await handleDeliveryMessage({ orgId: s.app.orgId, endpointId: e.id, seq: d.seq, attempt: 8 });
    const [after] = (await deliveries(e.id)).data;
    expect(after).toMatchObject({ status: 'FAILED', attempts: 8, statusCode: 503, nextAttemptAt: null });
    const queued = (await new LocalQueue().pending('webhook-deliver')).filter(
      (m) => JSON.parse(m.body).endpointId === e.id,
    );
    expect(queued).toEqual([]);
    expect(requestsTo('/last')).toHaveLength(1);
  });

  it('refreshing a real schema arrives as schema.updated', async () => {
    const e = await create('/schema', ['schema.updated']);
    const c = await s.call('POST', '/connections', {
      body: {
        name: 'schema source',
        type: 'POSTGRES',
        host: pg.host,
        port: pg.port,
        database: pg.database,
        username: pg.user,
        password: pg.password,
      },
    });
    expect(c.status, c.text).toBe(201);
    const r = await s.call('POST', `/connections/${c.body.data.id}/schema`);
    expect(r.status, r.text).toBe(200);
    await waitFor('schema.updated', async () => requestsTo('/schema').length >= 1);
    expect(bodies('/schema')[0]).toMatchObject({
      type: 'schema.updated',
      orgId: s.app.orgId,
      data: { connectionId: c.body.data.id, name: 'schema source' },
    });
    // The receiver answers before the delivery's outcome is stored: wait for the record, not the request.
    await waitFor(
      'the delivery recorded',
      async () => (await deliveries(e.id)).data[0]?.status === 'SUCCESS',
    );
    expect((await deliveries(e.id)).data[0]).toMatchObject({ status: 'SUCCESS', event: 'schema.updated' });
  });

  it('a 400 fails at once and is not retried', async () => {
    const e = await create('/reject', ['query.rejected']);
    plans.set('/reject', [400, 400, 400]);
    await record('query.rejected', { approvalId: 'a2' });
    const d = await waitFor('the delivery to fail', async () => {
      const [first] = (await deliveries(e.id)).data;
      return first?.status === 'FAILED' && first;
    });
    expect(d).toMatchObject({ attempts: 1, statusCode: 400, deliveredAt: null, nextAttemptAt: null });
    expect(d.error).toContain('400');
    await sleep(1500);
    expect(requestsTo('/reject')).toHaveLength(1);
    expect((await deliveries(e.id)).data[0].attempts).toBe(1);
  });

  it('delivers each event type only to the active endpoints subscribed to it, or to "*"', async () => {
    await create('/f-schema', ['schema.updated']);
    await create('/f-all', ['*']);
    await create('/f-approved', ['query.approved', 'query.expired']);
    await create('/f-off', ['*'], { isActive: false });
    const a = await record('query.approved', { approvalId: 'a3' });
    const b = await record('schema.updated', { connectionId: 'c1', tableCount: 2 });
    const c = await record('query.expired', { approvalId: 'a4' });
    await waitFor('all-events endpoint', async () => requestsTo('/f-all').length >= 3);
    await waitFor('schema endpoint', async () => requestsTo('/f-schema').length >= 1);
    await waitFor('approved endpoint', async () => requestsTo('/f-approved').length >= 2);
    await sleep(800);
    expect(bodies('/f-schema').map((x) => x.id)).toEqual([b.id]);
    expect(new Set(bodies('/f-all').map((x) => x.id))).toEqual(new Set([a.id, b.id, c.id]));
    expect(new Set(bodies('/f-approved').map((x) => x.id))).toEqual(new Set([a.id, c.id]));
    expect(requestsTo('/f-off')).toHaveLength(0);
  });

  it('rotation: the new secret is shown once, reads mask it, and both signatures verify for 24 h', async () => {
    const e = await create('/rotate', ['*']);
    const r = await s.call('PATCH', `/webhooks/${e.id}`, { body: { rotateSecret: true } });
    expect(r.status, r.text).toBe(200);
    const fresh = r.body.data.secret as string;
    expect(fresh).toMatch(/^whsec_/);
    expect(fresh).not.toBe(e.secret);
    const until = Date.parse(r.body.data.previousSecretExpiresAt);
    expect(Math.abs(until - (Date.now() + 24 * 3600_000))).toBeLessThan(60_000);
    expect((await s.call('GET', `/webhooks/${e.id}`)).body.data.secret).toBe(`whsec_…${fresh.slice(-4)}`);
    secrets.set('/rotate', [e.secret, fresh]);
    const t = await s.call('POST', `/webhooks/${e.id}/test`);
    expect(t.body.data.success).toBe(true);
    const [req] = requestsTo('/rotate');
    const sigs = String(req.headers['webhook-signature']).split(' ');
    expect(sigs).toHaveLength(2);
    for (const sig of sigs) expect(sig).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    // Each secret verifies on its own (the receiver checked both), and each signature is one of them.
    expect(verified.filter((v) => v.path === '/rotate')).toHaveLength(2);
    const only = (secret: string, sig: string) =>
      new Webhook(secret).verify(req.body, {
        ...(req.headers as Record<string, string>),
        'webhook-signature': sig,
      });
    expect(() => only(fresh, sigs[0])).not.toThrow();
    expect(() => only(e.secret, sigs[1])).not.toThrow();
    expect(() => only(fresh, sigs[1])).toThrow();
  });

  it('POST /webhooks/{id}/test sends a signed webhook.test now and answers the logged delivery', async () => {
    const e = await create('/test', ['schema.updated']);
    const t = await s.call('POST', `/webhooks/${e.id}/test`);
    expect(t.status, t.text).toBe(200);
    expect(t.body.data).toMatchObject({ success: true, error: null });
    expect(t.body.data.delivery).toMatchObject({
      endpointId: e.id,
      event: 'webhook.test',
      attempts: 1,
      statusCode: 200,
      status: 'SUCCESS',
    });
    const [body] = bodies('/test');
    expect(body).toMatchObject({ type: 'webhook.test', orgId: s.app.orgId, data: { endpointId: e.id } });
    expect(requestsTo('/test')[0].headers['webhook-id']).toBe(body.id);
    expect(verified.filter((v) => v.path === '/test')).toHaveLength(1);
    plans.set('/test', [500]);
    const failed = await s.call('POST', `/webhooks/${e.id}/test`);
    expect(failed.status).toBe(200);
    expect(failed.body.data).toMatchObject({
      success: false,
      delivery: { status: 'FAILED', statusCode: 500, attempts: 1 },
    });
    expect(failed.body.data.error).toContain('500');
    const log = await deliveries(e.id);
    expect(log.meta.pagination.total).toBe(2);
    expect(log.data.map((d) => d.id)).toEqual([failed.body.data.delivery.id, t.body.data.delivery.id]);
    await sleep(500);
    expect(requestsTo('/test')).toHaveLength(2);
  });

  it('a PostgreSQL database that disappears arrives as connection.health.degraded after 3 checks by the worker', async () => {
    const e = await create('/health', ['connection.health.degraded']);
    const dbName = `wh_health_${Date.now()}`;
    await createPostgresDatabase(pg, dbName);
    const c = await s.call('POST', '/connections', {
      body: {
        name: 'doomed',
        type: 'POSTGRES',
        host: pg.host,
        port: pg.port,
        database: dbName,
        username: pg.user,
        password: pg.password,
      },
    });
    expect(c.status, c.text).toBe(201);
    const connectionId = c.body.data.id;
    await postgresAdmin(pg, pg.database, `DROP DATABASE ${dbName} WITH (FORCE)`);
    for (const minute of [5, 10, 15]) {
      const slot = new Date(Date.UTC(2031, 0, 1, 0, minute)).toISOString();
      await fanOutHealthChecks(slot);
      await waitFor(`health check ${minute}`, async () => {
        const item = await db.get(`ORG#${s.app.orgId}`, `CONN#${connectionId}`);
        return item?.lastHealthSlot === slot;
      });
    }
    await waitFor('the degraded event', async () => requestsTo('/health').length >= 1);
    const [body] = bodies('/health');
    expect(body).toMatchObject({
      type: 'connection.health.degraded',
      orgId: s.app.orgId,
      data: { connectionId, name: 'doomed', consecutiveFailures: 3 },
    });
    expect(JSON.stringify(body)).not.toContain(pg.password);
    expect(verified.filter((v) => v.path === '/health')).toHaveLength(1);
    expect((await s.call('GET', `/connections/${connectionId}`)).body.data.isActive).toBe(false);
    const [d] = (await deliveries(e.id)).data;
    expect(d).toMatchObject({ status: 'SUCCESS', attempts: 1, event: 'connection.health.degraded' });
  });

  it('an event whose fan-out message was lost is delivered by the sweep; repeating the fan-out creates nothing twice', async () => {
    const e = await create('/sweep', ['workflow.run.failed']);
    // The outbox item exactly as record() writes it, but without the fan-out message (a crash in between).
    const event = {
      id: newId(),
      orgId: s.app.orgId,
      type: 'workflow.run.failed' as const,
      createdAt: new Date(Date.now() - 5 * 60_000).toISOString(),
      data: { runId: 'r1', status: 'FAILED' },
    };
    await db.put({
      pk: `ORG#${s.app.orgId}#EVENTS`,
      sk: eventSk(event.createdAt, event.id),
      ...event,
      status: 'pending',
      gsi1pk: 'EVENTS#PENDING',
      gsi1sk: `${event.createdAt}#${s.app.orgId}#${event.id}`,
    });
    await sleep(500);
    expect(requestsTo('/sweep')).toHaveLength(0);
    expect(await sweepPendingEvents()).toBeGreaterThanOrEqual(1);
    await waitFor('the swept event', async () => requestsTo('/sweep').length >= 1);
    expect(bodies('/sweep')[0].id).toBe(event.id);
    // Fanning out again (a duplicate message, another sweep) adds no delivery and sends nothing more.
    expect(await sweepPendingEvents(0)).toBe(0);
    const endpoint = (await webhookStore.get(s.app.orgId, e.id))!;
    const again = await ensureDelivery(endpoint, event, { queue: true });
    expect(again?.attempts).toBe(1);
    await sleep(800);
    const log = await deliveries(e.id);
    expect(log.meta.pagination.total).toBe(1);
    expect(log.data).toHaveLength(1);
    expect(requestsTo('/sweep')).toHaveLength(1);
  });

  it('the delivery log pages newest first with totals; DELETE removes the endpoint with its log', async () => {
    const e = await create('/log', ['query.expired']);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await record('query.expired', { n: i })).id);
    await waitFor('five deliveries', async () => {
      const all = (await deliveries(e.id)).data;
      return all.length === 5 && all.every((d) => d.status === 'SUCCESS');
    });
    const p1 = await deliveries(e.id, '?pageSize=2');
    expect(p1.meta.pagination).toEqual({ total: 5, page: 1, pageSize: 2, totalPages: 3 });
    const p3 = await deliveries(e.id, '?page=3&pageSize=2');
    expect(p3.data).toHaveLength(1);
    const all = (await deliveries(e.id)).data;
    expect(all.map((d) => d.createdAt)).toEqual([...all.map((d) => d.createdAt)].sort().reverse());
    expect(new Set(all.map((d) => d.eventId))).toEqual(new Set(ids));
    expect((await s.call('GET', `/webhooks/${e.id}/deliveries?page=9`)).body.data).toEqual([]);
    expect((await s.call('GET', `/webhooks/${e.id}/deliveries?pageSize=101`)).status).toBe(400);
    expect((await s.call('DELETE', `/webhooks/${e.id}`)).body.data).toEqual({ deleted: true });
    expect((await s.call('GET', `/webhooks/${e.id}/deliveries`)).status).toBe(404);
    expect(await db.query({ pk: `ORG#${s.app.orgId}#WH#${e.id}` })).toEqual([]);
    // An event recorded after the delete reaches nobody at that URL.
    await record('query.expired', { n: 99 });
    await sleep(800);
    expect(requestsTo('/log')).toHaveLength(5);
  });

  it("another organization's endpoint that never answers times out per attempt and delays nobody else", async () => {
    const slowOrg = await createOrganization({ name: 'Slow WH', adminEmail: `slow-${newId()}@example.com` });
    const slow = await s.call('POST', '/webhooks', {
      key: slowOrg.key,
      body: { url: `${rx.url}/slow`, events: ['*'] },
    });
    expect(slow.status).toBe(201);
    secrets.set('/slow', [slow.body.data.secret]);
    const fast = await create('/fast', ['query.approved']);
    for (let i = 0; i < 6; i++) await outbox().record(slowOrg.orgId, 'query.approved', { n: i });
    await waitFor('the slow endpoint to be hanging', async () => requestsTo('/slow').length >= 6);
    const ev = await record('query.approved', { fast: true });
    await waitFor('the fast delivery', async () => requestsTo('/fast').length >= 1);
    const [fastReq] = requestsTo('/fast');
    expect(JSON.parse(fastReq.body).id).toBe(ev.id);
    // Delivered while attempts to the silent endpoint were still waiting for their timeout (a queue that
    // waited for them would have delivered it only once none was open). No clock is read: machine load
    // can delay both, not reorder them, as long as the fast delivery comes within the attempt timeout.
    expect(slowOpenAtFast[0]).toBeGreaterThan(0);
    const [d] = (await deliveries(fast.id)).data;
    expect(d).toMatchObject({ status: 'SUCCESS', attempts: 1 });
    // The silent endpoint's attempts end at the timeout and are retried.
    const slowLog = await waitFor('timed-out attempts', async () => {
      const r = await s.call('GET', `/webhooks/${slow.body.data.id}/deliveries`, { key: slowOrg.key });
      const done = r.body.data.filter((x: any) => x.error?.includes('TIMEOUT'));
      return done.length === 6 && r.body.data;
    });
    for (const x of slowLog) expect(x.statusCode).toBeNull();
    expect(slowLog.some((x: any) => x.status === 'PENDING' || x.attempts > 1)).toBe(true);
    expect((await s.call('DELETE', `/webhooks/${slow.body.data.id}`, { key: slowOrg.key })).status).toBe(200);
  });

  it('a retry due later than the 15-minute queue delay hops through the queue without sending early', async () => {
    const e = await create('/hop', ['*']);
    const endpoint = (await webhookStore.get(s.app.orgId, e.id))!;
    const event = {
      id: newId(),
      orgId: s.app.orgId,
      type: 'workflow.run.completed' as const,
      createdAt: new Date().toISOString(),
      data: { runId: 'hop' },
    };
    const d = (await ensureDelivery(endpoint, event, { queue: false }))!;
    const now = Date.now();
    const msg = {
      orgId: s.app.orgId,
      endpointId: e.id,
      seq: d.seq,
      attempt: 1,
      notBefore: now + 3 * 3600_000,
    };
    await handleDeliveryMessage(msg);
    const waiting = (await new LocalQueue().pending('webhook-deliver')).filter(
      (m) => JSON.parse(m.body).endpointId === e.id,
    );
    expect(waiting).toHaveLength(1);
    expect(JSON.parse(waiting[0].body)).toEqual(msg);
    expect(waiting[0].visibleAt - now).toBeGreaterThanOrEqual(899_000);
    expect(waiting[0].visibleAt - now).toBeLessThanOrEqual(901_000 + 5000);
    await sleep(300);
    expect(requestsTo('/hop')).toHaveLength(0);
    // When the hop arrives at (or after) its time, the attempt is made.
    await handleDeliveryMessage({ ...msg, notBefore: Date.now() - 1 });
    expect(requestsTo('/hop')).toHaveLength(1);
    expect((await deliveries(e.id)).data[0]).toMatchObject({ status: 'SUCCESS', attempts: 1 });
    // The same message again changes nothing and sends nothing.
    await handleDeliveryMessage({ ...msg, notBefore: Date.now() - 1 });
    expect(requestsTo('/hop')).toHaveLength(1);
  });

  it('an attempt that breaks before an outcome frees its claim and is made again by the redelivered message', async () => {
    const e = await create('/claim', ['*']);
    const event = {
      id: newId(),
      orgId: s.app.orgId,
      type: 'query.expired' as const,
      createdAt: new Date().toISOString(),
      data: { approvalId: 'claim' },
    };
    const d = (await ensureDelivery((await webhookStore.get(s.app.orgId, e.id))!, event, { queue: false }))!;
    const msg = { orgId: s.app.orgId, endpointId: e.id, seq: d.seq, attempt: 1 };
    // The key service failing for a moment (KMS throttling): the worker throws (the queue will
    // redeliver) and sends nothing. (A secret that will never decrypt is an outcome instead: see
    // webhooks-recovery.test.ts.)
    const enc = encryption();
    const decrypt = enc.decrypt.bind(enc);
    const spy = vi.spyOn(enc, 'decrypt').mockImplementation(async (ct, ctx) => {
      if (ctx.webhookEndpointId === e.id)
        throw Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' });
      return decrypt(ct, ctx);
    });
    try {
      await expect(handleDeliveryMessage(msg)).rejects.toThrow(/Rate exceeded/);
    } finally {
      spy.mockRestore();
    }
    expect(requestsTo('/claim')).toHaveLength(0);
    const held = (await deliveries(e.id)).data[0];
    expect(held).toMatchObject({ status: 'PENDING', attempts: 1, statusCode: null });
    // The redelivered message makes attempt 1 at once (the claim was freed, not left to expire).
    await handleDeliveryMessage(msg);
    expect(requestsTo('/claim')).toHaveLength(1);
    expect((await deliveries(e.id)).data[0]).toMatchObject({ status: 'SUCCESS', attempts: 1 });
  });

  it('a duplicate message for an attempt in progress sends nothing', async () => {
    const e = await create('/dup', ['*']);
    const endpoint = (await webhookStore.get(s.app.orgId, e.id))!;
    const event = {
      id: newId(),
      orgId: s.app.orgId,
      type: 'query.expired' as const,
      createdAt: new Date().toISOString(),
      data: { approvalId: 'dup' },
    };
    const d = (await ensureDelivery(endpoint, event, { queue: false }))!;
    const msg = { orgId: s.app.orgId, endpointId: e.id, seq: d.seq, attempt: 1 };
    let release: () => void = () => {};
    plans.set('/dup', []);
    rxHold.set(
      '/dup',
      new Promise<void>((ok) => {
        release = ok;
      }),
    );
    const first = handleDeliveryMessage(msg);
    await waitFor('the first attempt to reach the receiver', async () => requestsTo('/dup').length === 1);
    await Promise.all([handleDeliveryMessage(msg), handleDeliveryMessage(msg)]);
    release();
    await first;
    expect(requestsTo('/dup')).toHaveLength(1);
    expect((await deliveries(e.id)).data[0]).toMatchObject({ status: 'SUCCESS', attempts: 1 });
  });

  it('every delivery the receiver got verified with the standardwebhooks package', () => {
    expect(failures).toEqual([]);
    expect(verified.length).toBeGreaterThan(10);
  });

  it('no secret appears in anything the service logged (at DEBUG)', () => {
    const logged = output.lines.join('');
    expect(logged).toContain('webhook delivery attempt failed'); // the log was captured
    const all = [...secrets.values()].flat();
    expect(all.length).toBeGreaterThan(10);
    for (const secret of all) {
      expect(logged).not.toContain(secret);
      expect(logged).not.toContain(secret.slice(6));
    }
  });
});
