import { sweepPendingEvents } from '../../shared/webhooks/fanout';
import { recoverOverdueDeliveries } from '../../shared/webhooks/overdue';

/**
 * Scheduled worker (every 5 minutes): fans out events still pending a while after they were recorded
 * (lost fan-out messages), then queues again, or ends, deliveries left PENDING past their due time
 * (lost or dead-lettered attempt messages).
 */
export const handler = async () => {
  const swept = await sweepPendingEvents();
  const overdue = await recoverOverdueDeliveries();
  return { swept, ...overdue };
};
