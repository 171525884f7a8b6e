/**
 * Database faults against dedicated PostgreSQL and MariaDB servers this file starts (never the shared
 * ones of global-setup): a session lost mid-query, a server shut down mid-query and restarted, and a
 * frozen server (SIGSTOP) on every path that queries. The service under test runs in this process, so
 * an 'error' event nobody listens to would surface here as an uncaughtException. Short deadlines come
 * from the configuration (LOUPE_DB_*_TIMEOUT_MS); nothing here measures time.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createConnection,
  mariadbAdmin,
  mariadbConnection,
  mariadbRows,
  postgresAdmin,
  postgresConnection,
} from '../support/connections';
import { type DbServer, mariadbInstalled, startMariadb, startPostgres } from '../support/databases';
import { type ApiAnswer, startTestServer, type TestServer } from '../support/server';
import { waitFor } from '../support/wait';

const uncaught: unknown[] = [];
const onUncaught = (e: unknown) => uncaught.push(e);

/** Reads of many seconds that the test interrupts (the statement timeout is 5 s; SLEEP is refused by the guard). */
const LONG_PG = 'SELECT count(*) FROM generate_series(1, 300000000)';
/** MariaDB's Sequence engine: 10^10 rows to add up. */
const LONG_MARIA = 'SELECT sum(a.seq) AS n FROM seq_1_to_100000 a, seq_1_to_100000 b';

let s: TestServer;
let pgServer: DbServer;
let mariaServer: DbServer | undefined;

beforeAll(async () => {
  process.on('uncaughtException', onUncaught);
  [pgServer, mariaServer] = await Promise.all([startPostgres(), startMariadb()]);
  s = await startTestServer({
    env: {
      LOUPE_DB_STATEMENT_TIMEOUT_MS: '5000',
      LOUPE_DB_CONNECT_TIMEOUT_MS: '1500',
      LOUPE_DB_TEST_TIMEOUT_MS: '2000',
      // Three sessions per database (the default is 20), so that three long reads fill the pool.
      LOUPE_DB_POOL_SIZE: '3',
    },
  });
}, 120_000);

afterAll(async () => {
  await s?.stop();
  for (const db of [pgServer, mariaServer]) {
    db?.faults.thaw();
    await db?.stop();
  }
  process.off('uncaughtException', onUncaught);
  for (const k of [
    'LOUPE_DB_STATEMENT_TIMEOUT_MS',
    'LOUPE_DB_CONNECT_TIMEOUT_MS',
    'LOUPE_DB_TEST_TIMEOUT_MS',
    'LOUPE_DB_POOL_SIZE',
  ])
    delete process.env[k];
}, 60_000);

const read = (id: string, sql = 'SELECT 1 AS one') =>
  s.call('POST', `/connections/${id}/query`, { body: { sql } });

/** The process is up, nothing went uncaught, and the API still answers. */
async function stillUp() {
  expect(uncaught).toEqual([]);
  expect((await s.call('GET', '/connections')).status).toBe(200);
}

/** A connection failure of the connect stage that ran out of time (not a statement timeout). */
function expectConnectTimeout(r: ApiAnswer, what: string) {
  expect(r.status, `${what}: ${r.text}`).toBe(422);
  expect(r.body.error.code, what).toBe('CONNECTION_FAILED');
  expect(r.body.error.details.diagnosis.stage, `${what}: ${r.text}`).toBe('TIMEOUT');
}

/** A frozen database answers either way, never 500: 504 QUERY_TIMEOUT, or 422 CONNECTION_FAILED / TIMEOUT. */
function expectFrozenAnswer(r: ApiAnswer, what: string) {
  if (r.status === 504) expect(r.body.error.code, what).toBe('QUERY_TIMEOUT');
  else expectConnectTimeout(r, what);
}

const pgInfo = () => pgServer;
/** The service's session running the read (a cursor's FETCH: DECLARE returns at once). */
// A read runs its statement in FETCH; so do the guard's catalog lookups before a read naming functions
// (a few milliseconds each), so a long read is one that has been fetching for over half a second.
const PG_RUNNING = `SELECT pid FROM pg_stat_activity WHERE usename = 'loupe_user' AND state = 'active' AND query LIKE 'FETCH%' AND now() - query_start > interval '500 milliseconds'`;

/** Waits until `probe` sees the read running; fails with the read's answer if it ended first. */
async function whileRunning<T>(pending: Promise<ApiAnswer>, probe: () => Promise<T | undefined | false>) {
  let ended: ApiAnswer | undefined;
  void pending.then((r) => {
    ended = r;
  });
  return waitFor('the read to run', async () => {
    if (ended) throw new Error(`the read ended first: ${ended.status} ${ended.text}`);
    return probe();
  });
}

describe('PostgreSQL', () => {
  it('a session lost mid-query (its backend killed) is 422 CONNECTION_FAILED; the pool recovers', async () => {
    const id = await createConnection(s, postgresConnection(pgInfo(), { name: 'pg-lost' }));
    expect((await read(id)).status).toBe(200);
    const pending = read(id, LONG_PG);
    const [backend] = await whileRunning(pending, async () => {
      const rows = await postgresAdmin(pgInfo(), pgInfo().database, PG_RUNNING);
      return rows.length ? rows : undefined;
    });
    process.kill(backend.pid, 'SIGKILL');
    const r = await pending;
    expect(r.status, r.text).toBe(422);
    expect(r.body.error.code).toBe('CONNECTION_FAILED');
    expect(r.body.error.details.diagnosis.stage).toBe('CONNECT');
    await stillUp();
    // PostgreSQL restarts its backends after the crash; once it accepts sessions, the next read succeeds.
    await waitFor('PostgreSQL to accept sessions', () =>
      postgresAdmin(pgInfo(), pgInfo().database, 'SELECT 1').then(
        () => true,
        () => false,
      ),
    );
    const after = await read(id);
    expect(after.status, after.text).toBe(200);
    expect(after.body.data.rows).toEqual([{ one: 1 }]);
  }, 60_000);

  it('a shutdown mid-query is 503 DATABASE_UNAVAILABLE with Retry-After; after the restart reads succeed', async () => {
    const id = await createConnection(s, postgresConnection(pgInfo(), { name: 'pg-shutdown' }));
    expect((await read(id)).status).toBe(200);
    const pending = read(id, LONG_PG);
    await whileRunning(pending, async () => {
      const rows = await postgresAdmin(pgInfo(), pgInfo().database, PG_RUNNING);
      return rows.length > 0;
    });
    await pgServer.faults.shutdown();
    const r = await pending;
    expect(r.status, r.text).toBe(503);
    expect(r.body.error.code).toBe('DATABASE_UNAVAILABLE');
    expect(r.headers.get('retry-after')).toBe('5');
    expect(r.body.error.details.diagnosis).toMatchObject({ stage: 'CONNECT', retryable: true });
    await stillUp();
    // While it is down: refused, a connection failure (never a 500).
    const down = await read(id);
    expect(down.status, down.text).toBe(422);
    expect(down.body.error.code).toBe('CONNECTION_FAILED');
    await pgServer.faults.restart();
    const after = await read(id);
    expect(after.status, after.text).toBe(200);
    await stillUp();
  }, 60_000);

  it('waiting for a free pooled session past the connect timeout is 422 CONNECTION_FAILED / TIMEOUT', async () => {
    const id = await createConnection(s, postgresConnection(pgInfo(), { name: 'pg-pool-busy' }));
    // The pool's three sessions (LOUPE_DB_POOL_SIZE) busy with long reads: a fourth read waits for one (pg-pool's "timeout
    // exceeded when trying to connect"), a connect-stage timeout, not a rejected statement.
    // Long reads of earlier tests may still be running on the server (their clients were cut off): only
    // sessions that were not already running a read count as this connection's.
    const earlier = new Set(
      (await postgresAdmin(pgInfo(), pgInfo().database, PG_RUNNING)).map((r) => (r as { pid: number }).pid),
    );
    // The guard's verdict on the statement's names (count, generate_series) is found once, before: the
    // long reads then hold their sessions for nothing but the statement.
    expect((await read(id, 'SELECT count(*) FROM generate_series(1, 3)')).status).toBe(200);
    const busy = [read(id, LONG_PG), read(id, LONG_PG), read(id, LONG_PG)];
    await whileRunning(busy[0], async () => {
      const rows = await postgresAdmin(pgInfo(), pgInfo().database, PG_RUNNING);
      return rows.filter((r) => !earlier.has((r as { pid: number }).pid)).length >= 3;
    });
    const r = await read(id);
    expectConnectTimeout(r, 'read waiting for a pooled session');
    expect(r.body.error.message).toMatch(/timeout exceeded when trying to connect/);
    for (const b of await Promise.all(busy)) {
      expect(b.status, b.text).toBe(504);
      expect(b.body.error.code).toBe('QUERY_TIMEOUT');
    }
    expect((await read(id)).status).toBe(200);
    await stillUp();
  }, 60_000);

  it('a frozen server: reads, tests, widget data, saved queries, metrics and workflow steps answer 504 or 422 TIMEOUT', async () => {
    const conn = postgresConnection(pgInfo(), { name: 'pg-frozen' });
    const id = await createConnection(s, conn);
    const testId = await createConnection(s, { ...conn, name: 'pg-frozen-test' });
    await postgresAdmin(pgInfo(), pgInfo().database, 'CREATE TABLE IF NOT EXISTS frozen_t (n int)');
    await postgresAdmin(pgInfo(), pgInfo().database, 'GRANT SELECT ON frozen_t TO loupe_user');
    const sql = 'SELECT count(*) AS n FROM frozen_t';
    const dash = await s.call('POST', '/dashboards', { body: { title: 'frozen' } });
    const widget = await s.call('POST', `/dashboards/${dash.body.data.id}/widgets`, {
      body: { title: 'w', type: 'TABLE', query: sql, connectionId: id },
    });
    expect(widget.status, widget.text).toBe(201);
    const saved = await s.call('POST', '/saved-queries', {
      body: { name: 'frozen', query: sql, connectionId: id },
    });
    expect(saved.status, saved.text).toBe(201);
    const metric = await s.call('POST', '/metrics', {
      body: { name: 'frozen', formula: sql, connectionId: id },
    });
    expect(metric.status, metric.text).toBe(201);
    const wf = await s.call('POST', '/workflows', {
      body: { name: 'frozen', triggerType: 'MANUAL', connectionId: id, steps: [{ query: sql }] },
    });
    expect(wf.status, wf.text).toBe(201);
    // One pooled session each, open and idle, when the server freezes.
    expect((await read(id)).status).toBe(200);
    expect((await read(testId)).status).toBe(200);

    pgServer.faults.freeze();
    try {
      // The open session: the statement's client timer fires (the server cannot cancel it).
      const first = await read(id);
      expect(first.status, first.text).toBe(504);
      expect(first.body.error.code).toBe('QUERY_TIMEOUT');
      // That session was destroyed; a new one cannot get in: the connect timeout, truthfully.
      expectConnectTimeout(await read(id), 'read with no open session');
      expectFrozenAnswer(
        await s.call('GET', `/dashboards/${dash.body.data.id}/widgets/${widget.body.data.id}/data`),
        'widget data',
      );
      expectFrozenAnswer(
        await s.call('POST', `/saved-queries/${saved.body.data.id}/run`, { body: {} }),
        'saved query',
      );
      expectFrozenAnswer(await s.call('GET', `/metrics/${metric.body.data.id}/value`), 'metric');
      const run = await s.call('POST', `/workflows/${wf.body.data.id}/run`);
      expect(run.status, run.text).toBe(201);
      expect(run.body.data.status).toBe('FAILED');
      const [step] = JSON.parse(run.body.data.stepResults);
      expect(step.status).toBe('FAILED');
      expect(['QUERY_TIMEOUT', 'CONNECTION_FAILED'], step.error).toContain(step.errorCode);
      if (step.errorCode === 'CONNECTION_FAILED') expect(step.error).toMatch(/^Connection timed out/);
      // The connection test on an open session: no answer in time is a TIMEOUT diagnosis.
      expectConnectTimeout(await s.call('POST', `/connections/${testId}/test`), 'connection test');
      await stillUp();
    } finally {
      pgServer.faults.thaw();
    }
    // Thawed: the test passes again (reactivating the connection) and reads succeed.
    const test = await s.call('POST', `/connections/${testId}/test`);
    expect(test.status, test.text).toBe(200);
    expect((await read(id)).status).toBe(200);
    expect((await read(testId)).status).toBe(200);
    await stillUp();
  }, 120_000);
});

describe.skipIf(!mariadbInstalled())('MariaDB', () => {
  const info = () => mariaServer as DbServer;
  const running = async () => {
    const rows = (await mariadbRows(
      info(),
      undefined,
      `SELECT ID FROM information_schema.PROCESSLIST WHERE INFO LIKE 'SELECT sum(a.seq)%'`,
    )) as unknown[];
    return rows.length > 0;
  };

  it('a session killed mid-query is 422 CONNECTION_FAILED; the next read succeeds', async () => {
    const id = await createConnection(s, mariadbConnection(info(), { name: 'maria-killed' }));
    expect((await read(id)).status).toBe(200);
    const pending = read(id, LONG_MARIA);
    await whileRunning(pending, running);
    await mariadbAdmin(
      info(),
      undefined,
      `BEGIN NOT ATOMIC FOR r IN (SELECT ID FROM information_schema.PROCESSLIST WHERE INFO LIKE 'SELECT sum(a.seq)%') DO KILL CONNECTION r.ID; END FOR; END`,
    );
    const r = await pending;
    expect(r.status, r.text).toBe(422);
    expect(r.body.error.code).toBe('CONNECTION_FAILED');
    await stillUp();
    expect((await read(id)).status).toBe(200);
  }, 60_000);

  it('a frozen server: a read on an open session is 504, a new session and the test are 422 TIMEOUT', async () => {
    const id = await createConnection(s, mariadbConnection(info(), { name: 'maria-frozen' }));
    const testId = await createConnection(s, mariadbConnection(info(), { name: 'maria-frozen-test' }));
    expect((await read(id)).status).toBe(200);
    expect((await read(testId)).status).toBe(200);
    info().faults.freeze();
    try {
      const first = await read(id);
      expect(first.status, first.text).toBe(504);
      expect(first.body.error.code).toBe('QUERY_TIMEOUT');
      expectConnectTimeout(await read(id), 'read with no open session');
      expectConnectTimeout(await s.call('POST', `/connections/${testId}/test`), 'connection test');
      await stillUp();
    } finally {
      info().faults.thaw();
    }
    expect((await s.call('POST', `/connections/${testId}/test`)).status).toBe(200);
    expect((await read(id)).status).toBe(200);
    await stillUp();
  }, 90_000);

  it('a shutdown mid-query is 503 (1053 server shutdown) or 422; after the restart reads succeed', async () => {
    const id = await createConnection(s, mariadbConnection(info(), { name: 'maria-shutdown' }));
    expect((await read(id)).status).toBe(200);
    const pending = read(id, LONG_MARIA);
    await whileRunning(pending, running);
    await info().faults.shutdown();
    const r = await pending;
    expect([503, 422], r.text).toContain(r.status);
    if (r.status === 503) {
      expect(r.body.error.code).toBe('DATABASE_UNAVAILABLE');
      expect(r.headers.get('retry-after')).toBe('5');
    } else expect(r.body.error.code).toBe('CONNECTION_FAILED');
    await stillUp();
    const down = await read(id);
    expect(down.status, down.text).toBe(422);
    expect(down.body.error.code).toBe('CONNECTION_FAILED');
    await info().faults.restart();
    const after = await read(id);
    expect(after.status, after.text).toBe(200);
    await stillUp();
  }, 90_000);
});
