/**
 * The deadlines of every database wait (docs/internals/database-faults.md): connect, statement and
 * connection test, from the validated configuration (LOUPE_DB_*_TIMEOUT_MS), and the client-side
 * timer that enforces them when the server cannot (a frozen or black-holed server never answers its
 * own statement_timeout).
 */
import { config } from '../../platform/config';

/** The most a request spends waiting on one database, whatever the settings (API Gateway answers 504 at 29 s). */
export const REQUEST_DB_BUDGET_MS = 25_000;

export interface DbDeadlines {
  connectMs: number;
  statementMs: number;
  testMs: number;
}

export function dbDeadlines(): DbDeadlines {
  const c = config();
  return {
    connectMs: c.LOUPE_DB_CONNECT_TIMEOUT_MS,
    statementMs: c.LOUPE_DB_STATEMENT_TIMEOUT_MS,
    testMs: c.LOUPE_DB_TEST_TIMEOUT_MS,
  };
}

/**
 * Sessions per database connection a process may hold (LOUPE_DB_POOL_SIZE, default 20): each adapter's
 * pool opens them as concurrent reads need them and closes idle ones after a minute. A Lambda instance
 * serves one request at a time, so there it bounds only what one request runs at once.
 */
export const dbPoolSize = (): number => config().LOUPE_DB_POOL_SIZE;

/**
 * Time kept between the server's own statement limit and the client timer: the server normally cancels
 * first (clean error, the connection stays usable); the client timer is the backstop.
 */
export const SERVER_LIMIT_MARGIN_MS = 500;

/** The server-side statement limit for the time left until `deadline`. */
export const serverLimitMs = (deadline: number) =>
  Math.max(1, Math.floor(deadline - Date.now() - SERVER_LIMIT_MARGIN_MS));

/**
 * `work`, or `timeout()` once `ms` have passed: then `abort()` runs (it destroys the connection, which
 * also ends whatever `work` was waiting on) and a later outcome of `work` is ignored.
 */
export function withTimer<T>(
  work: Promise<T>,
  ms: number,
  timeout: () => Error,
  abort: () => void,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let done = false;
    const timer = setTimeout(
      () => {
        if (done) return;
        done = true;
        try {
          abort();
        } finally {
          reject(timeout());
        }
      },
      Math.max(0, ms),
    );
    work.then(
      (v) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        resolve(v);
      },
      (e) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        reject(e);
      },
    );
  });
}
