import { queueWorker } from '../../shared/platform/queue/worker';
import { FanoutMessage, fanOutEvent } from '../../shared/webhooks/fanout';

/** Queue worker: one delivery per subscribed endpoint for a recorded event (queued by the outbox). */
export const handler = queueWorker(
  async (msg) => {
    await fanOutEvent(msg);
  },
  { schema: FanoutMessage },
);
