import type { Context, SQSEvent } from 'aws-lambda';
import { queueWorker } from '../../shared/platform/queue/worker';
import { handleManualRun, ManualRunMessage } from '../../shared/workflows/manual-runs';
import { runScheduled, type ScheduledPayload } from '../../shared/workflows/runner';

const manualRuns = queueWorker(handleManualRun, { schema: ManualRunMessage });

/**
 * The workflow runner, with two inputs:
 * - EventBridge Scheduler, the target of every workflow schedule: `{orgId, workflowId, version,
 *   scheduledTime: <aws.scheduler.scheduled-time>}`; the run uses the workflow's current published
 *   version and is deduplicated on (workflowId, scheduledFor);
 * - its queue: manual runs and action tests handed over by the workflows function
 *   (shared/workflows/manual-runs.ts), each claimed once.
 */
export const handler = async (event: ScheduledPayload | SQSEvent, context?: Context) =>
  Array.isArray((event as SQSEvent)?.Records)
    ? manualRuns(event as SQSEvent, context)
    : runScheduled(event as ScheduledPayload);
