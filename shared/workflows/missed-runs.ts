import * as z from 'zod/mini';
import { config } from '../platform/config';
import { newId } from '../platform/ids';
import { logger } from '../platform/logger';
import { count } from '../platform/measures';
import { queue } from '../platform/queue';
import { catchUpTarget, dueMinute, dueTimesThrough } from './due-times';
import { runClaimedSlot, scheduledWorkflow } from './runner';
import { scheduleExpressionOf } from './schedule';
import { cadenceOf } from './schedule-watch';
import { runStore, type ScheduleWatch, type SlotClaim, watchStore } from './store';
import { RUNNER_WORKER, syncSchedule } from './workflows';

/**
 * Scheduled runs that never started (docs/guides/workflows.md#missed-runs): the workflow sweep finds
 * every schedule watch whose due time is more than LOUPE_SCHEDULE_LATE_MS past (one Query on the
 * `WFDUE` index), reads the claims of the due times since (one Query on the workflow's `SLOT#` range),
 * and counts each due time no run was recorded for in MissedScheduledRuns: `not_started` when nothing
 * claimed it (the schedule was deleted, disabled or lost, the invocation dropped), `abandoned` when a
 * runner claimed it and stopped before starting the run. Then it repairs: the schedule is written again
 * through the scheduler port (re-created when it was lost), and the latest missed due time, unless a
 * later one was claimed already (its newer run supersedes it) or it is more than a day old, is handed
 * to the runner once, as a catch-up that claims the same due time as the scheduler's invocation would:
 * whichever of the two comes second runs nothing. A due time counted missed whose invocation still
 * arrives later runs then (late, once): missed means "not started within the late threshold".
 */

export type SlotState = 'not_started' | 'abandoned' | 'claimed' | 'ran';
export type MissedCause = Extract<SlotState, 'not_started' | 'abandoned'>;

/** Watches read per index page; due times checked per watch in one pass (the rest wait for the next). */
const PAGE = 100;
const MAX_DUE_PER_CHECK = 500;
/** The sweep stops starting new checks after this long (its function times out at 60 s). */
const SWEEP_BUDGET_MS = 30_000;

/** The runner worker's queue message for a catch-up run. */
export const CatchUpMessage = z.object({
  catchUp: z.literal(true),
  orgId: z.string().check(z.minLength(1)),
  workflowId: z.string().check(z.minLength(1)),
  scheduledFor: z.string().check(z.regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:00\.000Z$/)),
});
export type CatchUpMessage = z.infer<typeof CatchUpMessage>;

const stale = (iso: string | undefined, now: number, lateMs: number) =>
  !iso || !(Date.parse(iso) > now - lateMs);

/**
 * What became of a due time: `ran` (its run is recorded), `claimed` (a runner claimed it less than
 * `lateMs` ago and is starting it), `abandoned` (claimed longer ago than that and no run recorded: the
 * claimer stopped) or `not_started` (never claimed).
 */
export async function slotState(
  slot: SlotClaim | undefined,
  orgId: string,
  workflowId: string,
  now: number,
  lateMs: number,
): Promise<SlotState> {
  if (!slot) return 'not_started';
  if (slot.sequence === undefined) return stale(slot.claimedAt, now, lateMs) ? 'abandoned' : 'claimed';
  if (await runStore.get(orgId, workflowId, slot.sequence)) return 'ran';
  return stale(slot.boundAt ?? slot.claimedAt, now, lateMs) ? 'abandoned' : 'claimed';
}

export interface MissedSweep {
  /** Watches whose due times were checked. */
  checked: number;
  /** Due times found missed (and counted). */
  missed: number;
  /** Catch-up runs handed to the runner. */
  caughtUp: number;
}

/** The sweep's part for missed runs (functions/workers/workflow-sweep.ts, every minute). */
export async function sweepMissedRuns(now = Date.now()): Promise<MissedSweep> {
  const lateMs = config().LOUPE_SCHEDULE_LATE_MS;
  const stopAt = Date.now() + SWEEP_BUDGET_MS;
  const total: MissedSweep = { checked: 0, missed: 0, caughtUp: 0 };
  let after: ScheduleWatch | undefined;
  for (;;) {
    const page = await watchStore.due(now - lateMs, PAGE, after);
    for (const watch of page) {
      try {
        const r = await checkWatch(watch, now, lateMs);
        total.missed += r.missed;
        total.caughtUp += r.caughtUp;
      } catch (e) {
        // Left as it was: the next sweep checks it again (nothing was counted).
        logger().error('checking a schedule for missed runs failed', {
          orgId: watch.orgId,
          workflowId: watch.workflowId,
          error: String(e),
        });
      }
      total.checked++;
      if (Date.now() > stopAt) return total;
    }
    if (page.length < PAGE) return total;
    after = page[page.length - 1];
  }
}

async function checkWatch(watch: ScheduleWatch, now: number, lateMs: number) {
  const none = { missed: 0, caughtUp: 0 };
  const { orgId, workflowId } = watch;
  const cadence = cadenceOf(watch);
  const { due, next } = dueTimesThrough(cadence, watch.dueAt, now - lateMs, MAX_DUE_PER_CHECK);
  if (!due.length) return none;
  // The claims from the first due time checked to now: those of the due times checked, and any later one.
  const slots = await runStore.slots(orgId, workflowId, dueMinute(due[0]), dueMinute(now));
  const missed: { due: number; cause: MissedCause }[] = [];
  for (const d of due) {
    const state = await slotState(slots.get(dueMinute(d)), orgId, workflowId, now, lateMs);
    if (state === 'not_started' || state === 'abandoned') missed.push({ due: d, cause: state });
  }
  if (!missed.length) {
    await watchStore.advance(watch, watch.dueAt, next, 0);
    return none;
  }

  // Only a workflow still scheduled this way has missed anything.
  const found = await scheduledWorkflow({ orgId, workflowId });
  if ('skipped' in found) {
    await watchStore.remove(orgId, workflowId, watch.dueAt);
    return none;
  }
  const cfg = found.version.definition.triggerConfig;
  const current = cfg ? scheduleExpressionOf(cfg) : undefined;
  if (current?.expression !== watch.expression || current.timezone !== watch.timezone) {
    // Published with another schedule since the watch was armed: arm it (and the schedule) again.
    await syncSchedule(found.w, now);
    return none;
  }

  // Repairs first, the count last: a sweep cut off in between repeats them (both are idempotent) and
  // counts once.
  if (missed.some((m) => m.cause === 'not_started')) {
    try {
      await syncSchedule(found.w, now);
    } catch (e) {
      logger().error('writing the schedule of a workflow with missed runs failed', {
        orgId,
        workflowId,
        error: String(e),
      });
    }
  }
  const target = catchUpTarget(
    missed.map((m) => m.due),
    [...slots.keys()].map((k) => Date.parse(k)),
    now,
  );
  if (target !== null) {
    const message: CatchUpMessage = { catchUp: true, orgId, workflowId, scheduledFor: dueMinute(target) };
    await queue().send(RUNNER_WORKER, message, {
      dedupeId: `catch-up-${workflowId}-${message.scheduledFor}`,
    });
  }
  if (!(await watchStore.advance(watch, watch.dueAt, next, missed.length))) return none;
  for (const cause of ['not_started', 'abandoned'] as const) {
    const n = missed.filter((m) => m.cause === cause).length;
    if (n) count('scheduledRunsMissed', { cause }, n);
  }
  logger().warn('scheduled workflow runs missed', {
    orgId,
    workflowId,
    missed: missed.map((m) => ({ scheduledFor: dueMinute(m.due), cause: m.cause })).slice(0, 20),
    total: missed.length,
    catchUp: target === null ? null : dueMinute(target),
  });
  return { missed: missed.length, caughtUp: target === null ? 0 : 1 };
}

/**
 * The runner worker's part of a catch-up: claims the due time like a scheduled invocation would (a
 * claim left by a runner that stopped is taken over; one that ran, or is being started, is left alone),
 * then runs it. A repeated message, or the scheduler's invocation arriving late for the same due time,
 * finds the claim and runs nothing.
 */
export async function runCatchUp(msg: CatchUpMessage, now = Date.now()) {
  const found = await scheduledWorkflow(msg);
  if ('skipped' in found) return found;
  const { orgId, workflowId, scheduledFor } = msg;
  const token = newId();
  let sequence: number | undefined;
  if (!(await runStore.claimSlot(orgId, workflowId, scheduledFor, token))) {
    const slot = await runStore.getSlot(orgId, workflowId, scheduledFor);
    const state = await slotState(slot, orgId, workflowId, now, config().LOUPE_SCHEDULE_LATE_MS);
    if (!slot || state !== 'abandoned') return { skipped: 'duplicate' as const };
    if (!(await runStore.takeOverSlot(orgId, workflowId, scheduledFor, slot.runId, token)))
      return { skipped: 'duplicate' as const };
    sequence = slot.sequence;
  }
  logger().warn('running a missed scheduled run', { orgId, workflowId, scheduledFor });
  return runClaimedSlot({ ...found, scheduledFor, token, sequence });
}
