/** Sends work to a queue worker (see ../workers.ts): SQS in AWS, a durable local queue otherwise. */
export interface Queue {
  /**
   * Enqueues `body` (JSON) for the worker named `worker`. `delaySeconds` (0–900) postpones delivery;
   * `dedupeId` makes repeated sends of the same logical message within a short window a no-op where
   * the implementation supports it (workers are idempotent regardless).
   */
  send(worker: string, body: unknown, opts?: { delaySeconds?: number; dedupeId?: string }): Promise<void>;
}
