import { fanOutHealthChecks, slotOf } from '../../shared/connections/health';

/** Scheduled worker (every 5 minutes): queues a health check per checked connection of every organization. */
export const handler = async (event: { scheduledTime?: string } | undefined) => {
  const queued = await fanOutHealthChecks(slotOf(event?.scheduledTime));
  return { queued };
};
