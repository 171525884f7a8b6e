import { logger } from '../../shared/platform/logger';
import { sweepMissedRuns } from '../../shared/workflows/missed-runs';
import { sweepStaleRuns } from '../../shared/workflows/runner';

/**
 * Scheduled worker (every minute): closes workflow runs left RUNNING past their deadline as TIMED_OUT,
 * then finds scheduled runs that never started (counted in MissedScheduledRuns, repaired once). Each
 * part runs even when the other fails; a failure fails the invocation (the function's error alarm).
 */
export const handler = async () => {
  const [closed, missed] = await Promise.allSettled([sweepStaleRuns(), sweepMissedRuns()]);
  for (const r of [closed, missed])
    if (r.status === 'rejected') logger().error('workflow sweep failed', { error: String(r.reason) });
  if (closed.status === 'rejected') throw closed.reason;
  if (missed.status === 'rejected') throw missed.reason;
  return { closed: closed.value, ...missed.value };
};
