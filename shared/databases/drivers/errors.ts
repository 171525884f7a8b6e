/** Thrown by adapters when a read outlives its time budget on our side (run.ts maps it to 504 QUERY_TIMEOUT). */
export class QueryTimeoutError extends Error {
  readonly code = 'LOUPE_QUERY_TIMEOUT';
  constructor(ms: number) {
    super(`The query did not finish within ${ms} ms.`);
    this.name = 'QueryTimeoutError';
  }
}

/**
 * Thrown by adapters when the server did not let us in (connect, TLS, login, a free pooled connection)
 * or did not answer a connection test in time: a connection failure with a TIMEOUT diagnosis, not a
 * statement timeout.
 */
export class ConnectTimeoutError extends Error {
  readonly code = 'LOUPE_CONNECT_TIMEOUT';
  constructor(ms: number, what = 'connecting') {
    super(`The database server did not answer within ${ms} ms while ${what}.`);
    this.name = 'ConnectTimeoutError';
  }
}
