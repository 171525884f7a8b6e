import type { Context, SQSEvent } from 'aws-lambda';
import * as z from 'zod/mini';
import { queueWorker } from '../../shared/platform/queue/worker';
import { handleManualRun, ManualRunMessage } from '../../shared/workflows/manual-runs';
import { CatchUpMessage, runCatchUp } from '../../shared/workflows/missed-runs';
import { runScheduled, type ScheduledPayload } from '../../shared/workflows/runner';

const queued = queueWorker(
  async (msg: ManualRunMessage | CatchUpMessage) => {
    if ('catchUp' in msg) await runCatchUp(msg);
    else await handleManualRun(msg);
  },
  { schema: z.union([CatchUpMessage, ManualRunMessage]) },
);

/**
 * The workflow runner, with two inputs:
 * - EventBridge Scheduler, the target of every workflow schedule: `{orgId, workflowId, version,
 *   scheduledTime: <aws.scheduler.scheduled-time>}`; the run uses the workflow's current published
 *   version and is deduplicated on (workflowId, scheduledFor);
 * - its queue: manual runs and action tests handed over by the workflows function
 *   (shared/workflows/manual-runs.ts), each claimed once, and catch-ups of scheduled runs the workflow
 *   sweep found missed (shared/workflows/missed-runs.ts), claimed like a scheduled invocation.
 */
export const handler = async (event: ScheduledPayload | SQSEvent, context?: Context) =>
  Array.isArray((event as SQSEvent)?.Records)
    ? queued(event as SQSEvent, context)
    : runScheduled(event as ScheduledPayload);
