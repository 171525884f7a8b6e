import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { outbox } from '../../shared/platform/events';
import { startHttpsReceiver } from '../support/https-receiver';
import { startTestServer } from '../support/server';

const sleep = (ms: number) => new Promise((ok) => setTimeout(ok, ms));

describe('event webhook delivery across a restart', () => {
  it('a retry due while the local runtime is down is made after the restart (the queued attempt survives)', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'loupe-wh-restart-'));
    let status = 503;
    const rx = await startHttpsReceiver((_req, res) => {
      res.writeHead(status);
      res.end();
    });
    // The schedule doubled: the second attempt is due about 10 s (9–11 s) after the first, which leaves a
    // loaded machine ample time to stop the first server before it is due.
    const env = { LOUPE_OUTBOUND_TEST_HOSTS: rx.testHostEntry, LOUPE_WEBHOOK_RETRY_SCALE: '2' };
    try {
      const first = await startTestServer({ dataDir, env });
      const created = await first.call('POST', '/webhooks', {
        body: { url: `${rx.url}/hook`, events: ['query.approval.requested'] },
      });
      expect(created.status, created.text).toBe(201);
      const { id, secret } = created.body.data;
      const event = await outbox().record(first.app.orgId, 'query.approval.requested', { approvalId: 'r1' });
      const deadline = Date.now() + 30_000;
      while (rx.requests.length < 1 && Date.now() < deadline) await sleep(50);
      expect(rx.requests).toHaveLength(1);
      // Stop at once: the first attempt failed (503) and the second is waiting in the durable queue.
      await first.stop({ keepData: true });
      const stoppedAt = Date.now();
      status = 200;
      await sleep(500);
      expect(rx.requests).toHaveLength(1);

      const second = await startTestServer({ dataDir, adminKey: first.adminKey, env });
      try {
        const until = Date.now() + 45_000;
        while (rx.requests.length < 2 && Date.now() < until) await sleep(100);
        expect(rx.requests).toHaveLength(2);
        expect(rx.requests[1].at - rx.requests[0].at).toBeGreaterThanOrEqual(8000);
        expect(rx.requests[1].at).toBeGreaterThan(stoppedAt);
        for (const r of rx.requests) {
          const payload = new Webhook(secret).verify(r.body, r.headers as Record<string, string>) as any;
          expect(payload.id).toBe(event.id);
        }
        let d: any;
        const settle = Date.now() + 20_000;
        do {
          d = (await second.call('GET', `/webhooks/${id}/deliveries`)).body.data[0];
          if (d?.status === 'SUCCESS') break;
          await sleep(100);
        } while (Date.now() < settle);
        expect(d).toMatchObject({ status: 'SUCCESS', attempts: 2, statusCode: 200, eventId: event.id });
        await sleep(1000);
        expect(rx.requests).toHaveLength(2);
      } finally {
        await second.stop();
      }
    } finally {
      await rx.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 150_000);
});
