/**
 * No backend that Loupe started outlives its answer (issue 43): past a read's deadline the PostgreSQL
 * adapter answers 504 at once, destroys the session's socket, and then, over another session of the same
 * role, cancels the backend, terminates it if it is still there after a short grace, and drops the client
 * from the pool (docs/internals/database-sessions.md, "Past the deadline").
 *
 * On Debian's PostgreSQL with JIT on (`stockPostgres`), against a read whose plan takes seconds to
 * compile with LLVM, which checks for no interrupt: the answer comes before the compile would have ended,
 * and the backend is gone within seconds. Through a TCP relay that never passes the close of Loupe's
 * socket on to the server (a middlebox that lost the connection), the backend of a timed-out read would
 * otherwise wait in its aborted transaction for ever: it is terminated (the code before this change fails
 * that test; it passes the direct one, where the server's own statement_timeout already ends the backend
 * at the compile's end). The cleanup reuses an idle pooled session when there is one; reads timing out
 * together share one short-lived session. Loupe's catalog reads (introspect) run with JIT off. The tests
 * use login roles of their own, so backends of other test files on the same server are not counted.
 */
import { createServer, type Server, Socket } from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { QueryTimeoutError } from '../../shared/databases/drivers/errors';
import { PG_INTROSPECTION, postgresDriver } from '../../shared/databases/drivers/postgres';
import type { ConnectionTarget, Driver, QueryOptions } from '../../shared/databases/drivers/types';

const db = inject('stockPostgres');
const suffix = `${process.pid}_${Date.now().toString(36)}`;
const ROLE = `loupe_reap_${suffix}`;
const PASSWORD = 'reap-pass';

const target = (over: Partial<ConnectionTarget> = {}): ConnectionTarget => ({
  id: `pg-reap-${suffix}`,
  version: '1',
  type: 'POSTGRES',
  host: db?.host ?? '127.0.0.1',
  port: db?.port ?? null,
  database: db?.database ?? '',
  username: ROLE,
  password: PASSWORD,
  sslEnabled: false,
  ...over,
});

const read = (timeoutMs: number): QueryOptions => ({ maxRows: 10, maxBytes: 1_000_000, timeoutMs });

/**
 * A READ whose plan costs far above jit_above_cost, jit_inline_above_cost and jit_optimize_above_cost
 * (1,000,000 estimated rows, 200 CASE aggregates): LLVM compiles 200 expressions with inlining and
 * optimization, seconds during which the backend checks for no interrupt. It never runs to its end here:
 * every run is cancelled, and a cancelled backend stops at the compile's end.
 */
const ARMS = 200;
const JIT_READ = `SELECT ${Array.from(
  { length: ARMS },
  (_, i) => `sum(CASE WHEN g % ${i + 7} = ${i % 5} THEN g * ${i + 1} ELSE g + ${i} END)`,
).join(', ')} FROM generate_series(1, 1000000) g`;

let admin: pg.Client;
const drivers: Driver[] = [];
const driver = (over: Partial<ConnectionTarget> = {}) => {
  const d = postgresDriver(target(over));
  drivers.push(d);
  return d;
};

/** Backends of the test's role running a statement (not idle), as the superuser sees them. */
const activePids = async () =>
  (
    await admin.query<{ pid: number }>(
      `SELECT pid FROM pg_stat_activity WHERE usename = $1 AND application_name = 'loupe' AND state = 'active'
         AND pid <> pg_backend_pid() AND query NOT LIKE '%pg_cancel_backend%' AND query NOT LIKE '%pg_terminate_backend%'`,
      [ROLE],
    )
  ).rows.map((r) => r.pid);

/** Of `pids`, those still present in pg_stat_activity (in any state). */
const present = async (pids: number[]) =>
  (
    await admin.query<{ pid: number; state: string | null }>(
      'SELECT pid, state FROM pg_stat_activity WHERE pid = ANY($1::int[])',
      [pids],
    )
  ).rows;

/** Polls every 100 ms until `check` answers an empty list; returns the ms it took, or the last list after `limitMs`. */
async function until<T>(check: () => Promise<T[]>, limitMs: number): Promise<{ ms: number; left: T[] }> {
  const started = Date.now();
  for (;;) {
    const left = await check();
    if (left.length === 0 || Date.now() - started > limitMs) return { ms: Date.now() - started, left };
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The pids of the role's active backends, caught while reads run (polled until `count` show up). */
async function catchActive(limitMs: number, count = 1): Promise<number[]> {
  const started = Date.now();
  for (;;) {
    const pids = await activePids();
    if (pids.length >= count || Date.now() - started > limitMs) return pids;
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Samples, every 25 ms until stopped, the pids of the role's cleanup sessions (`loupe-cleanup`). */
function watchCleanupSessions() {
  const seen = new Set<number>();
  let stopped = false;
  const sampling = (async () => {
    while (!stopped) {
      const r = await admin.query<{ pid: number }>(
        `SELECT pid FROM pg_stat_activity WHERE usename = $1 AND application_name = 'loupe-cleanup'`,
        [ROLE],
      );
      for (const row of r.rows) seen.add(row.pid);
      await new Promise((res) => setTimeout(res, 25));
    }
  })();
  return {
    async stop() {
      stopped = true;
      await sampling;
      return [...seen];
    },
  };
}

let jitAvailable = false;
/**
 * How long a backend of JIT_READ run as the driver runs it (a cursor, then FETCH) ignores a cancel sent
 * 300 ms into the FETCH: the compile's length, measured by the first test.
 */
let compileMs = 0;

/**
 * How long to poll for a timed-out read's backend to stop running: 10 s, or twice the compile measured
 * on this machine when that is longer (a loaded machine compiles slower, and nothing ends a backend
 * inside its compile).
 */
const pollLimit = () => Math.max(10_000, 2 * compileMs);

const roleClient = async () => {
  const c = new pg.Client({
    host: db?.host,
    port: db?.port,
    database: db?.database,
    user: ROLE,
    password: PASSWORD,
  });
  await c.connect();
  return c;
};

const allPids = async () =>
  (
    await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE usename = $1', [ROLE])
  ).rows.map((r) => r.pid);

beforeAll(async () => {
  if (!db) return;
  admin = new pg.Client({
    host: db.host,
    port: db.port,
    database: db.database,
    user: db.adminUser,
    password: db.adminPassword,
  });
  await admin.connect();
  await admin.query(`CREATE ROLE ${ROLE} LOGIN PASSWORD '${PASSWORD}'`);
  jitAvailable = (await admin.query(`SELECT pg_jit_available() AND current_setting('jit')::bool AS on`))
    .rows[0].on;
});

afterAll(async () => {
  await Promise.all(drivers.map((d) => d.close()));
  if (!db) return;
  await admin.query(
    'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1 AND pid <> pg_backend_pid()',
    [ROLE],
  );
  await until(async () => present(await allPids()), 30_000);
  await admin.query(`DROP ROLE IF EXISTS ${ROLE}`);
  await admin.end();
});

const NO_JIT = 'JIT is not available or not on in this PostgreSQL (pg_jit_available() or the jit setting)';

describe.skipIf(!db)(
  db
    ? 'PostgreSQL: past the deadline, the backend is cancelled, terminated and dropped'
    : "PostgreSQL past the deadline (skipped: Debian's PostgreSQL, package postgresql-15, is not installed; CI installs it)",
  () => {
    it('the read is JIT-compiled with inlining and optimization, and its compile ignores pg_cancel_backend for seconds', async (ctx) => {
      if (!jitAvailable) ctx.skip(true, NO_JIT);
      const plan = (await admin.query(`EXPLAIN (FORMAT JSON) ${JIT_READ}`)).rows[0]['QUERY PLAN'][0];
      expect(plan.JIT?.Options).toMatchObject({ Inlining: true, Optimization: true, Expressions: true });
      const c = await roleClient();
      const other = await roleClient();
      try {
        await c.query(`BEGIN READ ONLY; DECLARE measure NO SCROLL CURSOR FOR ${JIT_READ}`);
        const started = Date.now();
        const ended = c.query('FETCH 11 FROM measure').then(
          () => ({ at: Date.now(), code: 'none' }),
          (e: { code?: string }) => ({ at: Date.now(), code: e.code }),
        );
        await new Promise((r) => setTimeout(r, 300));
        // The role may signal its own backends: the cancel is delivered, and waits for the compile's end.
        expect(
          (
            await other.query('SELECT pg_cancel_backend($1) AS ok', [
              (c as unknown as { processID: number }).processID,
            ])
          ).rows[0].ok,
        ).toBe(true);
        const end = await ended;
        expect(end.code).toBe('57014');
        compileMs = end.at - started;
        if (process.env.LOUPE_TEST_TRACE) console.log('compile window', compileMs);
        // Seconds past a 1 s deadline (about 3 s measured on two idle cores).
        expect(compileMs).toBeGreaterThan(2_000);
      } finally {
        await Promise.all([c.end(), other.end()]);
      }
    });

    it('answers 504 at the deadline, before the compile ends, and no backend of the read runs on after it', async (ctx) => {
      if (!jitAvailable || compileMs === 0) ctx.skip(true, NO_JIT);
      const d = driver();
      // Two sessions in the pool: the read takes one, the cleanup reuses the other (it opens none).
      await Promise.all([
        d.query('SELECT pg_sleep(0.2)', read(5_000)),
        d.query('SELECT pg_sleep(0.2)', read(5_000)),
      ]);
      const started = Date.now();
      const answer = d.query(JIT_READ, read(1_000)).then(
        () => undefined,
        (e: unknown) => e,
      );
      const pids = await catchActive(900);
      const e = await answer;
      const answeredMs = Date.now() - started;
      const opened = watchCleanupSessions();
      await new Promise((r) => setTimeout(r, 2_500)); // the cancel, the grace, the terminate
      expect(await opened.stop()).toEqual([]);
      expect(e).toBeInstanceOf(QueryTimeoutError);
      // At about the deadline, before the compile (measured above) would have ended: the answer does not
      // wait for the backend.
      expect(answeredMs).toBeLessThan(compileMs);
      expect(pids.length).toBe(1);
      // It runs on until its compile ends (about 4 s after the answer on two idle cores), not longer.
      const inactive = await until(
        async () => (await present(pids)).filter((r) => r.state === 'active'),
        pollLimit(),
      );
      if (process.env.LOUPE_TEST_TRACE) console.log('answered', answeredMs, 'inactive after', inactive.ms);
      expect(inactive.left).toEqual([]);
      // Then it is gone altogether (cancelled, then terminated; its socket was closed), and no other
      // backend of the role is running a statement.
      expect((await until(() => present(pids), 5_000)).left).toEqual([]);
      expect((await until(activePids, 5_000)).left).toEqual([]);
    });

    it('reads timing out together share one short-lived session for their cleanup', async (ctx) => {
      if (!jitAvailable || compileMs === 0) ctx.skip(true, NO_JIT);
      const d = driver({ id: `pg-reap-many-${suffix}` });
      const watch = watchCleanupSessions();
      const reads = Promise.all(
        [1, 2].map((i) =>
          d.query(`${JIT_READ} WHERE g <> ${i}`, read(1_000)).then(
            () => undefined,
            (e: unknown) => e,
          ),
        ),
      );
      const pids = await catchActive(900, 2);
      const answers = await reads;
      for (const e of answers) expect(e).toBeInstanceOf(QueryTimeoutError);
      expect(pids.length).toBe(2);
      await new Promise((r) => setTimeout(r, 2_500)); // the cancels, the grace, the terminates
      // No idle pooled session to reuse (both were taken by the reads): one short-lived session, not two.
      const cleanup = await watch.stop();
      expect(cleanup.length).toBe(1);
      // The reads' backends, once their compiles end, and the cleanup session are gone.
      expect((await until(() => present([...pids, ...cleanup]), pollLimit())).left).toEqual([]);
    });

    it('the pool keeps working after the cleanup: the next reads answer', async (ctx) => {
      if (!jitAvailable) ctx.skip(true, NO_JIT);
      const d = driver({ id: `pg-reap-next-${suffix}` });
      const e = await d.query(JIT_READ, read(1_000)).then(
        () => undefined,
        (x: unknown) => x,
      );
      expect(e).toBeInstanceOf(QueryTimeoutError);
      // At once, while the cleanup of the timed-out session still runs.
      const r = await d.query('SELECT 41 + 1 AS answer', read(5_000));
      expect(r.rows).toEqual([{ answer: 42 }]);
      // And after it has run (grace and both steps), several at once.
      await new Promise((r) => setTimeout(r, 3_000));
      const all = await Promise.all(
        Array.from({ length: 4 }, (_, i) => d.query(`SELECT ${i} AS i, pg_sleep(0.05)`, read(5_000))),
      );
      expect(all.map((x) => x.rows[0]?.i)).toEqual([0, 1, 2, 3]);
      // The timed-out read's backend ends with its compile (the next test counts the role's backends).
      expect((await until(activePids, pollLimit())).left).toEqual([]);
    });

    it("Loupe's catalog reads (introspect) are not JIT-compiled, even where every plan would be", async (ctx) => {
      if (!jitAvailable) ctx.skip(true, NO_JIT);
      if (!db?.logFile) ctx.skip(true, 'the server log is not readable');
      const role = `${ROLE}_jit0`;
      await admin.query(`CREATE ROLE ${role} LOGIN PASSWORD '${PASSWORD}'`);
      try {
        // Every plan of this role would be JIT-compiled; auto_explain logs each plan of the role, with
        // its "JIT" section when it was compiled (read back from the server's log: no timing involved).
        for (const setting of ['jit_above_cost', 'jit_inline_above_cost', 'jit_optimize_above_cost'])
          await admin.query(`ALTER ROLE ${role} SET ${setting} = 0`);
        await admin.query(`ALTER ROLE ${role} SET session_preload_libraries = 'auto_explain'`);
        await admin.query(`ALTER ROLE ${role} SET auto_explain.log_min_duration = 0`);
        await admin.query(`ALTER ROLE ${role} SET auto_explain.log_format = 'json'`);
        const { readFileSync } = await import('node:fs');
        const logFile = db?.logFile as string;
        const mark = () => readFileSync(logFile, 'utf8').length;
        const plansSince = (from: number) => {
          const text = readFileSync(logFile, 'utf8').slice(from);
          return text.split(/\n(?=\S)/).filter((entry) => entry.includes('"Query Text"'));
        };
        // The control: the same catalog query, sent by the role directly, is compiled.
        const c = new pg.Client({
          host: db?.host,
          port: db?.port,
          database: db?.database,
          user: role,
          password: PASSWORD,
        });
        await c.connect();
        const before = mark();
        await c.query(PG_INTROSPECTION.columns, [50_001]);
        await c.end();
        const direct = plansSince(before).filter((p) => p.includes('a.attname AS column'));
        expect(direct.length).toBeGreaterThan(0);
        expect(direct.every((p) => p.includes('"JIT"'))).toBe(true);
        // Through the driver: the introspection's queries are planned without JIT.
        const d = driver({ username: role, id: `pg-reap-jit0-${suffix}` });
        const from = mark();
        const snapshot = await d.introspect({ timeoutMs: 60_000 });
        expect(snapshot.tables).toBeDefined();
        const plans = plansSince(from);
        expect(plans.filter((p) => p.includes('a.attname AS column')).length).toBe(1);
        expect(plans.filter((p) => p.includes('"JIT"'))).toEqual([]);
        await d.close();
      } finally {
        await admin.query(
          'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1 AND pid <> pg_backend_pid()',
          [role],
        );
        await until(
          async () => (await admin.query('SELECT pid FROM pg_stat_activity WHERE usename = $1', [role])).rows,
          10_000,
        );
        await admin.query(`DROP ROLE ${role}`);
      }
    });

    describe('through a relay that never tells the server Loupe closed its socket', () => {
      let relay: Server | undefined;
      let relayPort = 0;
      const sockets = new Set<Socket>();

      beforeAll(async () => {
        if (!db) return;
        // Forwards both ways; when Loupe's side closes, the server's side is left open (a middlebox that
        // lost the connection): the server never reads an end of file.
        relay = createServer((inbound) => {
          const outbound = new Socket();
          sockets.add(inbound).add(outbound);
          outbound.connect(db.port ?? 5432, db.host);
          inbound.on('data', (b) => outbound.write(b));
          outbound.on('data', (b) => {
            if (!inbound.destroyed) inbound.write(b);
          });
          inbound.on('error', () => {});
          outbound.on('error', () => inbound.destroy());
          outbound.on('close', () => inbound.destroy());
        });
        await new Promise<void>((r) => relay?.listen(0, '127.0.0.1', r));
        relayPort = (relay.address() as { port: number }).port;
      });

      afterAll(async () => {
        for (const s of sockets) s.destroy();
        await new Promise((r) => (relay ? relay.close(r) : r(undefined)));
      });

      it('a timed-out read whose socket close never reaches the server: its backend is terminated', async (ctx) => {
        if (!jitAvailable || compileMs === 0) ctx.skip(true, NO_JIT);
        const d = driver({ port: relayPort, id: `pg-reap-relay-${suffix}` });
        await d.ping();
        const started = Date.now();
        const answer = d.query(JIT_READ, read(1_000)).then(
          () => undefined,
          (e: unknown) => e,
        );
        const pids = await catchActive(900);
        expect(await answer).toBeInstanceOf(QueryTimeoutError);
        const answeredMs = Date.now() - started;
        expect(pids.length).toBe(1);
        // The backend runs on until its compile ends; then it is gone within seconds. Without the
        // terminate step it would be cancelled by its statement_timeout and then wait, idle in its aborted
        // transaction, for a message that never comes.
        const inactive = await until(
          async () => (await present(pids)).filter((r) => r.state === 'active'),
          pollLimit(),
        );
        expect(inactive.left).toEqual([]);
        const gone = await until(() => present(pids), 5_000);
        if (process.env.LOUPE_TEST_TRACE)
          console.log(
            'relay: answered',
            answeredMs,
            'inactive',
            inactive.ms,
            'then gone',
            gone.ms,
            gone.left,
          );
        expect(gone.left).toEqual([]);
        const r = await d.query('SELECT 1 AS one', read(5_000));
        expect(r.rows).toEqual([{ one: 1 }]);
      });
    });
  },
);
