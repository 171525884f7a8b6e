import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { generateKey } from '../../shared/auth/key-material';
import { postgresConnection } from '../support/connections';
import { type HttpsReceiver, startHttpsReceiver } from '../support/https-receiver';
import { type ServerProcess, spawnServer } from '../support/server-process';
import { waitFor } from '../support/wait';

/**
 * Issue 22, item 4: the real local server (`infra/local/server.ts`, its own process) stops gracefully on
 * SIGTERM: it accepts nothing new, every request under way gets its full answer (here a manual run and
 * an event-webhook test, both waiting on a slow HTTPS receiver), then the process exits 0.
 */
describe('SIGTERM with requests in flight', () => {
  let rx: HttpsReceiver;
  let server: ServerProcess | undefined;
  const dataDir = mkdtempSync(join(tmpdir(), 'loupe-stop-'));
  const key = generateKey();
  const info = inject('postgres');

  beforeAll(async () => {
    rx = await startHttpsReceiver((req, res) => {
      const delay = Number(/delay=(\d+)/.exec(req.url)?.[1] ?? 0);
      setTimeout(() => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"ok":true}');
      }, delay);
    });
    server = await spawnServer('infra/local/server.ts', {
      PORT: '0',
      LOUPE_DATA_DIR: dataDir,
      LOUPE_ADMIN_KEY: key,
      LOUPE_LOG_LEVEL: 'SILENT',
      LOUPE_DEMO_DATA: 'false',
      LOUPE_LOCAL_INSTANCES: '0',
      LOUPE_OUTBOUND_TEST_HOSTS: rx.testHostEntry,
      LOUPE_MANUAL_RUN_WAIT_MS: '15000',
    });
  });
  afterAll(async () => {
    await server?.stop();
    await rx?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${server!.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${key}`,
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      body: body !== undefined ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    return { status: res.status, text, body: JSON.parse(text) };
  };

  it('every caller gets its full answer, nothing new is accepted, and the process exits 0', async () => {
    const conn = await call('POST', '/connections', postgresConnection(info, { name: 'stop' }));
    expect(conn.status, conn.text).toBe(201);
    const wf = await call('POST', '/workflows', {
      name: 'slow delivery',
      triggerType: 'MANUAL',
      connectionId: conn.body.data.id,
      steps: [{ query: 'SELECT 1 AS one' }],
      actions: [
        {
          type: 'WEBHOOK',
          order: 0,
          config: {
            version: 2,
            url: `${rx.url}/run?delay=2500`,
            method: 'POST',
            bodyMode: 'JSON',
            bodyTemplate: '{"n": {{query_1.row_count}}}',
            retry: { maxAttempts: 1, baseDelayMs: 100 },
          },
        },
      ],
    });
    expect(wf.status, wf.text).toBe(201);
    const hook = await call('POST', '/webhooks', {
      url: `${rx.url}/test?delay=2500`,
      events: ['schema.updated'],
    });
    expect(hook.status, hook.text).toBe(201);

    const run = call('POST', `/workflows/${wf.body.data.id}/run`);
    const test = call('POST', `/webhooks/${hook.body.data.id}/test`);
    // Both are under way: the receiver holds their deliveries.
    await waitFor('both deliveries to reach the receiver', async () =>
      ['/run', '/test'].every((p) => rx.requests.some((r) => r.url.startsWith(p))),
    );
    server!.child.kill('SIGTERM');
    await waitFor('the stop to begin', async () => server!.output.join('').includes('SIGTERM: stopping'));
    // Nothing new is accepted.
    await expect(
      fetch(`${server!.url}/workflows`, { headers: { authorization: `Bearer ${key}` } }),
    ).rejects.toThrow();

    const [ran, tested] = await Promise.all([run, test]);
    expect(ran.status, ran.text).toBe(201);
    expect(ran.body.data.status, ran.body.data.error).toBe('SUCCESS');
    expect(ran.body.data.actionAttempts).toMatchObject([{ status: 'SUCCESS', statusCode: 200 }]);
    expect(tested.status, tested.text).toBe(200);
    expect(tested.body.data).toMatchObject({ success: true, error: null });
    expect(await server!.exited).toBe(0);
    expect(server!.output.join('')).toContain('stopped');
  });
});
