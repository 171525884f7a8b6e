import * as z from 'zod/mini';
import type { AuthContext } from '../auth/context';
import { assertCredentialsUsable } from '../credentials/access';
import { config } from '../platform/config';
import { AppError, notFound } from '../platform/errors';
import { nowIso } from '../platform/ids';
import { logger } from '../platform/logger';
import { queue } from '../platform/queue';
import { credentialIdsOf } from './actions';
import { continueRun, type RunView, runView, startRun } from './runner';
import { type Definition, runStore } from './store';
import { findWorkflow, RUNNER_WORKER } from './workflows';

/**
 * Manual runs and action tests (decisions in docs/internals/runtime-faults.md): the request creates the
 * run (RUNNING) and hands it to the runner worker, the one that runs scheduled workflows, through its
 * queue; the run's job (whose rights, which definition) is stored beside it and claimed once, so a
 * repeated delivery never runs it twice and a lost one is closed by the sweep. The request then waits
 * for the run up to LOUPE_MANUAL_RUN_WAIT_MS (20 s), never closer than ANSWER_MARGIN_MS to its own
 * deadline, and answers the run as it stands: finished, or RUNNING while it goes on.
 */

/** Time kept for reading the run back and answering once the wait is over. */
export const ANSWER_MARGIN_MS = 3000;
const POLL_FIRST_MS = 20;
const POLL_MAX_MS = 500;

/** The runner worker's queue message for a manual run. */
export const ManualRunMessage = z.object({
  orgId: z.string().check(z.minLength(1)),
  workflowId: z.string().check(z.minLength(1)),
  sequence: z.int().check(z.positive()),
});
export type ManualRunMessage = z.infer<typeof ManualRunMessage>;

interface Job {
  ctx: AuthContext;
  definition: Definition;
  onlyActionOrder?: number;
}

/** How long this request may wait for its run. */
export function waitBudget(remainingMs: () => number): number {
  return Math.max(0, Math.min(config().LOUPE_MANUAL_RUN_WAIT_MS, remainingMs() - ANSWER_MARGIN_MS));
}

/** Starts the run, hands it to the runner and waits up to `waitMs` for it; answers the run as it stands. */
async function handOver(
  ctx: AuthContext,
  id: string,
  trigger: 'MANUAL' | 'ACTION_TEST',
  waitMs: number,
  onlyActionOrder?: number,
): Promise<RunView> {
  const w = await findWorkflow(ctx, id);
  const run = await startRun({
    workflow: w,
    definition: w.draft,
    trigger,
    definitionVersion: null,
    draftRevision: w.draftRevision,
    scheduledFor: null,
    onlyActionOrder,
  });
  const job: Job = {
    ctx,
    definition: w.draft,
    ...(onlyActionOrder !== undefined ? { onlyActionOrder } : {}),
  };
  try {
    await runStore.putJob(run, { ...job });
    const message: ManualRunMessage = {
      orgId: run.orgId,
      workflowId: run.workflowId,
      sequence: run.sequence,
    };
    await queue().send(RUNNER_WORKER, message, { dedupeId: run.id });
    logger().info('manual run handed to the runner', { workflowId: run.workflowId, runId: run.id });
  } catch (e) {
    // Not handed over: the run is closed now (the caller gets the error, nothing runs later).
    await runStore
      .finish(run, {
        status: 'FAILED',
        stepResults: null,
        actionResults: null,
        durationMs: 0,
        error: 'The run could not be handed to the runner; nothing was run.',
        completedAt: nowIso(),
      })
      .catch(() => undefined);
    await runStore.deleteJob(run.orgId, run.workflowId, run.sequence).catch(() => undefined);
    throw e;
  }
  const until = Date.now() + waitMs;
  for (let pause = POLL_FIRST_MS; Date.now() < until; pause = Math.min(POLL_MAX_MS, pause * 2)) {
    await new Promise((ok) => setTimeout(ok, Math.min(pause, Math.max(0, until - Date.now()))));
    const now = await runStore.get(run.orgId, run.workflowId, run.sequence);
    if (now?.status !== 'RUNNING') break;
  }
  return runView(run.orgId, run.workflowId, run.sequence);
}

/** POST /workflows/{id}/run: the current draft with its actions; 201 with the run, finished or RUNNING. */
export async function runDraftNow(ctx: AuthContext, id: string, waitMs: number) {
  return handOver(ctx, id, 'MANUAL', waitMs);
}

/**
 * POST /workflows/{id}/actions/{order}/test: 428 CONFIRMATION_REQUIRED unless confirmDelivery is true;
 * runs the draft's steps (stopIfEmpty does not stop a test: its point is to send) and sends that one
 * action for real. 422 ACTION_TEST_FAILED with the run in details.run when a step or the delivery failed;
 * 201 with the run RUNNING when the delivery is still under way at the end of the wait.
 */
export async function testAction(
  ctx: AuthContext,
  id: string,
  order: number,
  confirmDelivery: boolean | undefined,
  waitMs: number,
) {
  const w = await findWorkflow(ctx, id);
  const action = w.draft.actions.find((a) => a.order === order);
  if (!action) throw notFound('Workflow action');
  // The caller must be allowed to send the action's credential (403 before any step runs).
  await assertCredentialsUsable(ctx, credentialIdsOf(action.type, action.config));
  if (confirmDelivery !== true)
    throw new AppError(
      428,
      'CONFIRMATION_REQUIRED',
      'An action test sends a real delivery: resend with {"confirmDelivery": true} to confirm.',
      { actionOrder: order, type: action.type },
    );
  const run = await handOver(ctx, id, 'ACTION_TEST', waitMs, order);
  if (run.status !== 'SUCCESS' && run.status !== 'RUNNING')
    throw new AppError(422, 'ACTION_TEST_FAILED', run.error ?? `The action test ended ${run.status}.`, {
      run,
    });
  return run;
}

/**
 * The runner worker's part: claims the run's job (a repeated delivery finds it claimed and does nothing)
 * and executes the run to its end. A run already closed (swept) is not started.
 */
export async function handleManualRun(msg: ManualRunMessage): Promise<void> {
  const claimed = await runStore.claimJob(msg.orgId, msg.workflowId, msg.sequence);
  if (!claimed) {
    logger().info('manual run already claimed', { workflowId: msg.workflowId, sequence: msg.sequence });
    return;
  }
  const job = claimed as unknown as Job;
  const run = await runStore.get(msg.orgId, msg.workflowId, msg.sequence);
  if (run?.status === 'RUNNING') {
    const ended = await continueRun(run, {
      ctx: job.ctx,
      definition: job.definition,
      trigger: run.trigger,
      definitionVersion: null,
      draftRevision: run.draftRevision,
      scheduledFor: null,
      onlyActionOrder: typeof job.onlyActionOrder === 'number' ? job.onlyActionOrder : undefined,
    });
    logger().info('manual run finished', { workflowId: run.workflowId, runId: run.id, status: ended.status });
  }
  await runStore.deleteJob(msg.orgId, msg.workflowId, msg.sequence);
}
