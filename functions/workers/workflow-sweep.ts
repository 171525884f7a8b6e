import { sweepStaleRuns } from '../../shared/workflows/runner';

/** Scheduled worker (every minute): closes workflow runs left RUNNING past their deadline as TIMED_OUT. */
export const handler = async () => ({ closed: await sweepStaleRuns() });
