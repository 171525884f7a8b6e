/** Thrown by adapters when a read outlives its time budget on our side (run.ts maps it to 504 QUERY_TIMEOUT). */
export class QueryTimeoutError extends Error {
  readonly code = 'LOUPE_QUERY_TIMEOUT';
  constructor(ms: number) {
    super(`The query did not finish within ${ms} ms.`);
    this.name = 'QueryTimeoutError';
  }
}
