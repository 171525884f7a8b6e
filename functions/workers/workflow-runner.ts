import { runScheduled, type ScheduledPayload } from '../../shared/workflows/runner';

/**
 * Scheduled worker: the EventBridge Scheduler target of every workflow schedule. The payload is
 * `{orgId, workflowId, version, scheduledTime: <aws.scheduler.scheduled-time>}`; the run uses the
 * workflow's current published version and is deduplicated on (workflowId, scheduledFor).
 */
export const handler = async (event: ScheduledPayload) => runScheduled(event);
