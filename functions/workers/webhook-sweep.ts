import { sweepPendingEvents } from '../../shared/webhooks/fanout';

/** Scheduled worker: fans out events still pending a while after they were recorded (lost fan-out messages). */
export const handler = async () => {
  const swept = await sweepPendingEvents();
  return { swept };
};
