import * as z from 'zod/mini';
import { config } from '../platform/config';
import { queue } from '../platform/queue';

/** The queue worker that makes one delivery attempt per message. */
export const DELIVER_WORKER = 'webhook-deliver';

/** Waits before attempts 2…8 (decisions §9), before jitter and LOUPE_WEBHOOK_RETRY_SCALE. */
export const RETRY_DELAYS_SECONDS = [5, 30, 120, 600, 1800, 3600, 10_800] as const;
export const MAX_ATTEMPTS = RETRY_DELAYS_SECONDS.length + 1;
/** SQS's longest message delay; longer waits hop through the queue again (a re-enqueue chain). */
export const MAX_QUEUE_DELAY_SECONDS = 900;
/** How long the previous secret keeps signing after a rotation. */
export const ROTATION_OVERLAP_MS = 24 * 60 * 60 * 1000;

export const DeliveryMessage = z.object({
  orgId: z.string().check(z.minLength(1), z.maxLength(200)),
  endpointId: z.string().check(z.minLength(1), z.maxLength(200)),
  seq: z.number().check(z.int(), z.gte(1)),
  attempt: z.number().check(z.int(), z.gte(1), z.lte(MAX_ATTEMPTS)),
  /** Epoch ms before which the attempt must not run (retries beyond one queue delay). */
  notBefore: z.optional(z.number().check(z.int())),
});
export type DeliveryMessage = z.infer<typeof DeliveryMessage>;

/** The wait after failed attempt `attempt` (1-based): the schedule × scale, ±10 % jitter. */
export function retryDelayMs(
  attempt: number,
  scale = config().LOUPE_WEBHOOK_RETRY_SCALE,
  random = Math.random,
) {
  const base = RETRY_DELAYS_SECONDS[Math.min(attempt, RETRY_DELAYS_SECONDS.length) - 1] * 1000 * scale;
  return Math.round(base * (0.9 + 0.2 * random()));
}

/** 408, 429, 5xx (and network errors) are retried; every other non-2xx fails at once. */
export const isRetryableStatus = (status: number) => status === 408 || status === 429 || status >= 500;

/** Queues attempt `msg.attempt`, waiting until `notBefore` (at most 15 minutes per hop). */
export async function enqueueAttempt(msg: DeliveryMessage, now = Date.now()): Promise<void> {
  const waitSeconds = msg.notBefore ? Math.ceil((msg.notBefore - now) / 1000) : 0;
  const delaySeconds = Math.min(MAX_QUEUE_DELAY_SECONDS, Math.max(0, waitSeconds));
  await queue().send(DELIVER_WORKER, msg, { delaySeconds });
}
