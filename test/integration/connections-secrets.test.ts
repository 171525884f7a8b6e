import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type LocalApp, startLocal } from '../../infra/local/app';
import { generateKey } from '../../shared/auth/key-material';
import { checkHealth, fanOutHealthChecks } from '../../shared/connections/health';
import { db } from '../../shared/platform/db/store';
import { freePort } from '../support/databases';
import { captureOutput } from '../support/output';

/**
 * Connection passwords never leave the service: not in responses, not in the app's log lines, not in
 * the Powertools logger output (at DEBUG), not in stored history, annotations or events.
 */
describe('connection secrets stay secret', () => {
  const pg = inject('postgres');
  const WRONG = 'Wrong-Secret-pw-7781';
  const dataDir = mkdtempSync(join(tmpdir(), 'loupe-secrets-'));
  const key = generateKey();
  const appLines: string[] = [];
  const output = captureOutput();
  const stdout = output.lines;
  const texts: string[] = [];
  let app: LocalApp;

  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${app.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    texts.push(text);
    return { status: res.status, body: JSON.parse(text) };
  };

  beforeAll(async () => {
    output.start();
    app = await startLocal({
      port: 0,
      dataDir,
      env: { LOUPE_ADMIN_KEY: key, LOUPE_LOG_LEVEL: 'DEBUG', POWERTOOLS_DEV: undefined },
      log: (l) => appLines.push(l),
    });
  });
  afterAll(async () => {
    output.stop();
    await app?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('exercises every path that handles a password', async () => {
    const good = await call('POST', '/connections', {
      name: 'good',
      type: 'POSTGRES',
      host: pg.host,
      port: pg.port,
      database: pg.database,
      username: pg.user,
      encryptedPassword: pg.password,
    });
    expect(good.status).toBe(201);
    const id = good.body.data.id;
    expect((await call('POST', `/connections/${id}/test`)).status).toBe(200);
    expect((await call('POST', `/connections/${id}/schema`)).status).toBe(200);
    expect((await call('POST', `/connections/${id}/query`, { sql: 'SELECT 1 AS one' })).status).toBe(200);
    expect((await call('POST', `/connections/${id}/query`, { sql: 'SELECT nope' })).status).toBe(422);
    expect(
      (await call('PATCH', `/connections/${id}`, { password: pg.password, sslEnabled: false })).status,
    ).toBe(200);

    const wrong = await call('POST', '/connections', {
      name: 'wrong',
      type: 'POSTGRES',
      host: pg.host,
      port: pg.port,
      database: pg.database,
      username: pg.user,
      password: WRONG,
    });
    const wrongTest = await call('POST', `/connections/${wrong.body.data.id}/test`);
    expect(wrongTest.status).toBe(422);
    expect(wrongTest.body.error.details.diagnosis.stage).toBe('AUTH');

    const down = await call('POST', '/connections', {
      name: 'down',
      type: 'POSTGRES',
      host: '127.0.0.1',
      port: await freePort(),
      database: pg.database,
      username: pg.user,
      password: WRONG,
    });
    for (const minute of [5, 10, 15])
      await checkHealth({
        orgId: app.orgId,
        connectionId: down.body.data.id,
        slot: new Date(Date.UTC(2031, 0, 1, 0, minute)).toISOString(),
      });
    await fanOutHealthChecks(new Date(Date.UTC(2031, 0, 1, 1)).toISOString());
    await call('GET', '/connections');
    await call('GET', `/connections/${down.body.data.id}`);
    await call('GET', `/connections/${id}/queries`);
  });

  it('no response, log line or stored item carries a password', async () => {
    expect(texts.length).toBeGreaterThan(10);
    expect(appLines.length).toBeGreaterThan(10);
    // The Powertools logger did write (DEBUG): the checks below are not vacuous.
    expect(stdout.join('')).toContain('"service":"loupe"');
    const stored = JSON.stringify([
      ...(await db.query({ pk: `ORG#${app.orgId}` })),
      ...(await db.query({ pk: `ORG#${app.orgId}#EVENTS` })),
    ]);
    for (const secret of [pg.password, WRONG]) {
      for (const t of texts) expect(t).not.toContain(secret);
      for (const l of appLines) expect(l).not.toContain(secret);
      for (const l of stdout) expect(l).not.toContain(secret);
      expect(stored).not.toContain(secret);
    }
  });
});
