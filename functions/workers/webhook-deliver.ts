import { queueWorker } from '../../shared/platform/queue/worker';
import { handleDeliveryMessage } from '../../shared/webhooks/delivery';
import { DeliveryMessage } from '../../shared/webhooks/schedule';

/** Queue worker: one signed delivery attempt per message (retries are new, delayed messages). */
export const handler = queueWorker(
  async (msg) => {
    await handleDeliveryMessage(msg);
  },
  { schema: DeliveryMessage },
);
