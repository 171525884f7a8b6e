import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { handler as webhookSweep } from '../../functions/workers/webhook-sweep';
import { db } from '../../shared/platform/db/store';
import { encryption } from '../../shared/platform/encryption';
import { LocalEncryption } from '../../shared/platform/encryption/local';
import { type EventType, outbox } from '../../shared/platform/events';
import { newId, padSeq } from '../../shared/platform/ids';
import { LocalQueue } from '../../shared/platform/queue/local';
import { UNSIGNABLE_ERROR } from '../../shared/webhooks/delivery';
import { ensureDelivery } from '../../shared/webhooks/fanout';
import { recoverOverdueDeliveries } from '../../shared/webhooks/overdue';
import { secretContext } from '../../shared/webhooks/signing';
import { webhookStore } from '../../shared/webhooks/store';
import { type HttpsReceiver, startHttpsReceiver } from '../support/https-receiver';
import { captureOutput } from '../support/output';
import { startTestServer, type TestServer } from '../support/server';
import { sleep, waitFor } from '../support/wait';

/**
 * Event webhook deliveries that cannot be signed, and deliveries left PENDING past their due time, over
 * real HTTP: the local runtime's fan-out and delivery workers, a real HTTPS receiver that verifies every
 * request with `standardwebhooks`, and the `webhook-sweep` scheduled worker's handler. The tests run in
 * order: each leaves no delivery PENDING, so the sweeps of the next one see only their own.
 */
describe('event webhooks: unsignable and overdue deliveries', () => {
  let s: TestServer;
  let rx: HttpsReceiver;
  let orgId: string;
  /** Secrets every request to a path must verify with. */
  const secrets = new Map<string, string[]>();
  const verified: Array<{ path: string; id: string }> = [];
  const failures: string[] = [];
  /** Everything the process writes while the runtime logs at DEBUG (no secret may appear). */
  const output = captureOutput();
  /** Every secret the API showed (none may appear in the logs). */
  const shown: string[] = [];
  /** Ciphertexts written by the tests (must not appear in logs or answers either). */
  const ciphertexts: string[] = [];

  beforeAll(async () => {
    output.start();
    rx = await startHttpsReceiver((req, res) => {
      const keys = secrets.get(req.url) ?? [];
      if (!keys.length) failures.push(`${req.url}: no secret known`);
      for (const secret of keys) {
        try {
          const payload = new Webhook(secret).verify(req.body, req.headers as Record<string, string>) as any;
          verified.push({ path: req.url, id: payload.id });
        } catch (e) {
          failures.push(`${req.url}: ${(e as Error).message}`);
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"ok":true}');
    });
    s = await startTestServer({
      env: {
        LOUPE_OUTBOUND_TEST_HOSTS: rx.testHostEntry,
        LOUPE_WEBHOOK_RETRY_SCALE: '0.02',
        LOUPE_WEBHOOK_TIMEOUT_MS: '3000',
        LOUPE_LOG_LEVEL: 'DEBUG',
      },
    });
    orgId = s.app.orgId;
  });
  afterAll(async () => {
    output.stop();
    await s?.stop();
    await rx?.close();
  });

  const requestsTo = (path: string) => rx.requests.filter((r) => r.url === path);
  async function create(path: string, events: string[]) {
    const r = await s.call('POST', '/webhooks', { body: { url: `${rx.url}${path}`, events } });
    expect(r.status, r.text).toBe(201);
    secrets.set(path, [r.body.data.secret]);
    shown.push(r.body.data.secret);
    return r.body.data as { id: string; secret: string };
  }
  const endpointKey = (id: string) => [`ORG#${orgId}`, `WEBHOOK#${id}`] as const;
  const deliveryKey = (id: string, seq: number) => [`ORG#${orgId}#WH#${id}`, `SEQ#${padSeq(seq)}`] as const;
  const deliveries = async (id: string) => {
    const r = await s.call('GET', `/webhooks/${id}/deliveries`);
    expect(r.status, r.text).toBe(200);
    return r.body.data as any[];
  };
  const settled = (id: string, status: string, count = 1) =>
    waitFor(`${count} ${status} deliveries`, async () => {
      const all = await deliveries(id);
      return all.length === count && all.every((d) => d.status === status) && all;
    });
  const forEndpoint = (id: string) => (m: { body: string }) => JSON.parse(m.body).endpointId === id;
  const queued = async (id: string) =>
    (await new LocalQueue().pending('webhook-deliver')).filter(forEndpoint(id));
  const deadLettered = async (id: string) =>
    (await new LocalQueue().deadLetters('webhook-deliver')).filter(forEndpoint(id));
  const record = (type: EventType, data: unknown) => outbox().record(orgId, type, data);
  /** A delivery of a new event to the endpoint, with no queue message (as if the message was lost). */
  async function unqueued(endpointId: string, type: EventType = 'query.expired') {
    const endpoint = (await webhookStore.get(orgId, endpointId))!;
    const event = { id: newId(), orgId, type, createdAt: new Date().toISOString(), data: { n: 1 } };
    return (await ensureDelivery(endpoint, event, { queue: false }))!;
  }
  /** Moves a pending delivery's due time `minutes` into the past (the due index sorts by it first). */
  async function overdue(endpointId: string, seq: number, minutes: number, changes = {}) {
    const key = deliveryKey(endpointId, seq);
    const item = (await db.get(...key))!;
    const due = new Date(Date.now() - minutes * 60_000).toISOString();
    await db.patch(...key, { ...changes, gsi1sk: String(item.gsi1sk).replace(/^[^#]+/, due) });
  }

  it('a corrupted secret: the delivery ends FAILED at its first attempt with the reason; nothing is sent, retried or dead-lettered', async () => {
    const e = await create('/corrupt', ['query.approved']);
    const stored = (await db.get(...endpointKey(e.id)))!.secretEnc as string;
    const corrupt = `${stored.slice(0, -6)}AAAAAA`;
    ciphertexts.push(stored, corrupt);
    await db.patch(...endpointKey(e.id), { secretEnc: corrupt });
    const ev = await record('query.approved', { approvalId: 'corrupt' });
    const [d] = await settled(e.id, 'FAILED');
    expect(d).toMatchObject({
      eventId: ev.id,
      attempts: 1,
      statusCode: null,
      deliveredAt: null,
      nextAttemptAt: null,
      error: UNSIGNABLE_ERROR,
    });
    // The local queue would have retried a failed message after 1 s and 2 s.
    await sleep(3500);
    expect(requestsTo('/corrupt')).toHaveLength(0);
    expect(await deliveries(e.id)).toMatchObject([{ id: d.id, status: 'FAILED', attempts: 1 }]);
    expect(await queued(e.id)).toEqual([]);
    expect(await deadLettered(e.id)).toEqual([]);
    // A finished delivery is not overdue, however late the sweep looks.
    expect(await recoverOverdueDeliveries(0)).toEqual({ requeued: 0, failed: 0, purged: 0 });
    const answer = JSON.stringify(await deliveries(e.id));
    for (const part of [e.secret, e.secret.slice(6), ...corrupt.split(':').slice(1)])
      expect(answer).not.toContain(part);
  });

  it('a secret under a key that no longer decrypts: the test answers the FAILED delivery; rotating lets the next event through, signed with the new secret only', async () => {
    const e = await create('/rekey', ['query.rejected']);
    const elsewhere = await new LocalEncryption(randomBytes(32)).encrypt(
      e.secret,
      secretContext(orgId, e.id),
    );
    ciphertexts.push(elsewhere);
    await db.patch(...endpointKey(e.id), { secretEnc: elsewhere });
    const t = await s.call('POST', `/webhooks/${e.id}/test`);
    expect(t.status, t.text).toBe(200);
    expect(t.body.data).toMatchObject({
      success: false,
      error: UNSIGNABLE_ERROR,
      delivery: {
        event: 'webhook.test',
        status: 'FAILED',
        attempts: 1,
        statusCode: null,
        error: UNSIGNABLE_ERROR,
      },
    });
    expect(requestsTo('/rekey')).toHaveLength(0);
    // The old secret cannot sign, so it is not kept for the 24 h overlap.
    const r = await s.call('PATCH', `/webhooks/${e.id}`, { body: { rotateSecret: true } });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.previousSecretExpiresAt).toBeNull();
    secrets.set('/rekey', [r.body.data.secret]);
    shown.push(r.body.data.secret);
    const ev = await record('query.rejected', { approvalId: 'rekey' });
    await waitFor(
      'the delivery after rotation',
      async () => (await deliveries(e.id))[0]?.status === 'SUCCESS',
    );
    const [req] = requestsTo('/rekey');
    expect(String(req.headers['webhook-signature']).split(' ')).toHaveLength(1);
    expect(verified.filter((v) => v.path === '/rekey')).toEqual([{ path: '/rekey', id: ev.id }]);
    expect((await deliveries(e.id)).map((d) => d.status)).toEqual(['SUCCESS', 'FAILED']);
  });

  it('a previous secret that stops decrypting during the rotation overlap is left out: deliveries go on with the new one', async () => {
    const e = await create('/overlap', ['query.approved']);
    const r = await s.call('PATCH', `/webhooks/${e.id}`, { body: { rotateSecret: true } });
    expect(r.body.data.previousSecretExpiresAt).toEqual(expect.any(String));
    const previous = (await db.get(...endpointKey(e.id)))!.previousSecretEnc as string;
    ciphertexts.push(previous);
    await db.patch(...endpointKey(e.id), { previousSecretEnc: `${previous.slice(0, -6)}AAAAAA` });
    secrets.set('/overlap', [r.body.data.secret]);
    shown.push(r.body.data.secret);
    await record('query.approved', { approvalId: 'overlap' });
    const [d] = await settled(e.id, 'SUCCESS');
    expect(d).toMatchObject({ attempts: 1, statusCode: 200 });
    expect(String(requestsTo('/overlap')[0].headers['webhook-signature']).split(' ')).toHaveLength(1);
  });

  it('a delivery stuck PENDING past its due time (its message lost) is sent by the sweep exactly once, even by two sweeps at once', async () => {
    const e = await create('/stuck', ['*']);
    const d = await unqueued(e.id);
    await sleep(500);
    expect(requestsTo('/stuck')).toHaveLength(0);
    // Not yet overdue: the scheduled worker leaves it to its queue message for 15 minutes.
    expect(await webhookSweep()).toMatchObject({ requeued: 0, failed: 0 });
    await overdue(e.id, d.seq, 20);
    const runs = await Promise.all([webhookSweep(), webhookSweep()]);
    expect(runs.map((r) => r.requeued).sort()).toEqual([0, 1]);
    const [done] = await settled(e.id, 'SUCCESS');
    expect(done).toMatchObject({ id: d.id, attempts: 1, statusCode: 200, error: null });
    expect(await webhookSweep()).toMatchObject({ requeued: 0, failed: 0 });
    await sleep(1000);
    expect(requestsTo('/stuck')).toHaveLength(1);
    expect(verified.filter((v) => v.path === '/stuck')).toEqual([{ path: '/stuck', id: d.eventId }]);
  });

  it('the sweep makes a retry whose message was lost and an attempt whose worker died; an attempt in progress waits for its lease', async () => {
    const e = await create('/resume', ['*']);
    const now = Date.now();
    // Attempt 1 answered 503 and the worker stopped before queueing attempt 2, due 20 minutes ago.
    const retry = await unqueued(e.id);
    await overdue(e.id, retry.seq, 20, {
      attempts: 1,
      completed: 1,
      statusCode: 503,
      error: 'The endpoint answered HTTP 503.',
      nextAttemptAt: new Date(now - 20 * 60_000).toISOString(),
    });
    // Attempt 1 was claimed by a worker that died: its lease ran out.
    const died = await unqueued(e.id);
    await overdue(e.id, died.seq, 20, { attempts: 1, completed: 0, leaseUntil: now - 60_000 });
    // Attempt 1 is in progress (its lease runs): never taken over.
    const busy = await unqueued(e.id);
    await overdue(e.id, busy.seq, 20, { attempts: 1, completed: 0, leaseUntil: now + 60_000 });
    expect(await webhookSweep()).toMatchObject({ requeued: 2, failed: 0 });
    await waitFor('two deliveries', async () => requestsTo('/resume').length === 2);
    const byId = async () => new Map((await deliveries(e.id)).map((d) => [d.id, d]));
    // The receiver answered; the outcomes are recorded just after (later on a loaded machine).
    await waitFor('both outcomes recorded', async () => {
      const l = await byId();
      return l.get(retry.id)?.status === 'SUCCESS' && l.get(died.id)?.status === 'SUCCESS';
    });
    await sleep(1000); // an attempt wrongly made for the busy one would show meanwhile
    let log = await byId();
    expect(log.get(retry.id)).toMatchObject({ status: 'SUCCESS', attempts: 2, statusCode: 200 });
    expect(log.get(died.id)).toMatchObject({ status: 'SUCCESS', attempts: 1, statusCode: 200 });
    expect(log.get(busy.id)).toMatchObject({ status: 'PENDING', attempts: 1, statusCode: null });
    expect(new Set(verified.filter((v) => v.path === '/resume').map((v) => v.id))).toEqual(
      new Set([retry.eventId, died.eventId]),
    );
    // Once the lease has run out, the next sweep makes that attempt too.
    await db.patch(...deliveryKey(e.id, busy.seq), { leaseUntil: Date.now() - 1 });
    expect(await webhookSweep()).toMatchObject({ requeued: 1 });
    await waitFor('the third delivery', async () => requestsTo('/resume').length === 3);
    log = await waitFor('its outcome recorded', async () => {
      const l = await byId();
      return l.get(busy.id)?.status === 'SUCCESS' && l;
    });
    await sleep(500); // nothing more is sent
    expect(log.get(busy.id)).toMatchObject({ status: 'SUCCESS', attempts: 1 });
    expect(requestsTo('/resume')).toHaveLength(3);
  });

  it('the sweep ends FAILED a delivery it queued three times without an outcome, and a stuck test delivery, sending nothing', async () => {
    const e = await create('/give-up', ['*']);
    const tired = await unqueued(e.id);
    await overdue(e.id, tired.seq, 20, { recoveries: 3 });
    const test = await unqueued(e.id, 'webhook.test');
    await overdue(e.id, test.seq, 20, { attempts: 1, completed: 0, leaseUntil: Date.now() - 60_000 });
    expect(await webhookSweep()).toMatchObject({ requeued: 0, failed: 2 });
    const log = new Map((await deliveries(e.id)).map((d) => [d.id, d]));
    expect(log.get(tired.id)).toMatchObject({ status: 'FAILED', attempts: 0, nextAttemptAt: null });
    expect(log.get(tired.id).error).toMatch(/^Attempt 1 could not be made: it failed inside Loupe/);
    expect(log.get(test.id)).toMatchObject({ status: 'FAILED', attempts: 1 });
    expect(log.get(test.id).error).toMatch(/test delivery did not complete/);
    expect(await webhookSweep()).toMatchObject({ requeued: 0, failed: 0 });
    await sleep(800);
    expect(requestsTo('/give-up')).toHaveLength(0);
    expect(await queued(e.id)).toEqual([]);
  });

  it('a recorded outcome resets the count: a delivery recovered before keeps its retries', async () => {
    const e = await create('/count', ['*']);
    const d = await unqueued(e.id);
    await overdue(e.id, d.seq, 20, { recoveries: 2 });
    expect(await webhookSweep()).toMatchObject({ requeued: 1 });
    await settled(e.id, 'SUCCESS');
    expect((await db.get(...deliveryKey(e.id, d.seq)))!.recoveries).toBeUndefined();
  });

  it('the log of an endpoint whose DELETE stopped before removing it is removed by the sweep', async () => {
    const e = await create('/gone', ['*']);
    const d = await unqueued(e.id);
    await overdue(e.id, d.seq, 20);
    expect(await webhookStore.delete(orgId, e.id)).toBe(true); // the endpoint, not yet its log
    expect(await webhookSweep()).toMatchObject({ requeued: 0, purged: 1 });
    expect(await db.query({ pk: `ORG#${orgId}#WH#${e.id}` })).toEqual([]);
    expect(requestsTo('/gone')).toHaveLength(0);
  });

  it('a test that fails inside Loupe (the key service throttling) answers 500 and its delivery ends FAILED, not sent later', async () => {
    const e = await create('/test-throttled', ['*']);
    const enc = encryption();
    const decrypt = enc.decrypt.bind(enc);
    const spy = vi.spyOn(enc, 'decrypt').mockImplementation(async (ct, ctx) => {
      if (ctx.webhookEndpointId === e.id)
        throw Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' });
      return decrypt(ct, ctx);
    });
    try {
      const t = await s.call('POST', `/webhooks/${e.id}/test`);
      expect(t.status, t.text).toBe(500);
      expect(t.text).not.toContain('Rate exceeded');
    } finally {
      spy.mockRestore();
    }
    const [d] = await deliveries(e.id);
    expect(d).toMatchObject({ event: 'webhook.test', status: 'FAILED', attempts: 1, statusCode: null });
    expect(d.error).toMatch(/^The test could not be sent/);
    expect(await webhookSweep()).toMatchObject({ requeued: 0, failed: 0 });
    await sleep(800);
    expect(requestsTo('/test-throttled')).toHaveLength(0);
  });

  it('every request the receiver got verified with the secret the endpoint had then', () => {
    expect(failures).toEqual([]);
    expect(verified.length).toBeGreaterThanOrEqual(7);
  });

  it('nothing logged (at DEBUG) holds a secret or a stored ciphertext; the unusable secret is reported', () => {
    const logged = output.lines.join('');
    expect(logged).toContain('webhook signing secret cannot be used');
    expect(shown.length).toBeGreaterThanOrEqual(10);
    for (const secret of shown) {
      expect(logged).not.toContain(secret);
      expect(logged).not.toContain(secret.slice(6));
    }
    for (const c of ciphertexts) for (const part of c.split(':').slice(1)) expect(logged).not.toContain(part);
  });
});
