import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { remainingCents } from '../../shared/usage/balance';
import { startTestServer, type TestServer } from '../support/server';

const run = promisify(execFile);
const cli = (args: string[]) =>
  run('node_modules/.bin/tsx', ['infra/local/cli.ts', ...args], {
    env: { ...process.env, LOUPE_LOG_LEVEL: 'SILENT' },
  });

describe('operator command-line tool', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(() => s.stop());

  it('creates an organization on the data directory a running server is serving, and its key works at once', async () => {
    const { stdout } = await cli([
      'org',
      'create',
      '--name',
      'Acme',
      '--admin-email',
      'ops@acme.test',
      '--json',
      '--data-dir',
      s.dataDir,
    ]);
    const out = JSON.parse(stdout);
    expect(Object.keys(out).sort()).toEqual(['key', 'orgId', 'userId']);
    const ctx = await s.call('GET', '/', { key: out.key });
    expect(ctx.status).toBe(200);
    const members = await s.call('GET', '/members', { key: out.key });
    expect(members.body.data).toEqual([
      expect.objectContaining({ id: out.userId, email: 'ops@acme.test', role: 'admin' }),
    ]);
  });

  it('adds balance to a user found by id alone', async () => {
    const { stdout } = await cli([
      'org',
      'create',
      '--name',
      'Bal',
      '--admin-email',
      'b@bal.test',
      '--json',
      '--data-dir',
      s.dataDir,
    ]);
    const { orgId, userId } = JSON.parse(stdout);
    const before = await remainingCents(orgId, userId);
    const added = await cli([
      'balance',
      'add',
      '--user',
      userId,
      '--cents',
      '125.5',
      '--json',
      '--data-dir',
      s.dataDir,
    ]);
    expect(JSON.parse(added.stdout).remaining).toBe(before + 125.5);
    expect(await remainingCents(orgId, userId)).toBe(before + 125.5);
  });

  it('fails clearly with exit code 2 on bad arguments', async () => {
    await expect(cli(['balance', 'add', '--user', 'x', '--data-dir', s.dataDir])).rejects.toMatchObject({
      code: 2,
    });
    await expect(cli(['org', 'create', '--name', 'NoEmail', '--data-dir', s.dataDir])).rejects.toMatchObject({
      code: 2,
    });
    await expect(
      cli(['balance', 'add', '--user', 'no-such-user', '--cents', '1', '--data-dir', s.dataDir]),
    ).rejects.toMatchObject({
      code: 2,
    });
  });
});
