import { actingAs } from '../auth/authenticate';
import { type AuthContext, isAdmin } from '../auth/context';
import { executeReadOnly } from '../connections/execute';
import { connectionStore } from '../connections/store';
import { pagination } from '../http/envelope';
import type { PageQuery } from '../http/schemas';
import { config } from '../platform/config';
import type { Item } from '../platform/db/store';
import { AppError, isAppError, notFound } from '../platform/errors';
import { outbox } from '../platform/events';
import { newId, nowIso } from '../platform/ids';
import { logger } from '../platform/logger';
import { count, observe } from '../platform/measures';
import { type ActionAttempt, type DeliverOutcome, deliverAction, type StepOutput } from './actions';
import { scheduledMinute } from './schedule';
import { armWatch } from './schedule-watch';
import {
  type Definition,
  type RunRecord,
  type RunStatus,
  type RunTrigger,
  runStore,
  stepConnection,
  stripRun,
  type WorkflowRecord,
  workflowStore,
} from './store';
import { findWorkflow } from './workflows';

/** Bounds of the JSON text stored on a run (the whole run item stays far below DynamoDB's 400 KB). */
export const STEP_RESULTS_MAX_BYTES = 64 * 1024;
export const ACTION_RESULTS_MAX_BYTES = 16 * 1024;
/** Rows read per step in a run (the read-only path's default cap) and in a preview. */
export const RUN_MAX_ROWS = 1000;
export const PREVIEW_MAX_ROWS = 100;
/** The sweep closes RUNNING runs this long after their deadline (the runner itself closes them at it). */
export const SWEEP_GRACE_MS = 60_000;
const MAX_ERROR_CHARS = 1000;
/** The error of an attempt still RUNNING when its run ended (its answer, if any, was never recorded). */
export const CUT_ATTEMPT =
  'The attempt was cut off when its run ended (deadline or interruption); its outcome is unknown.';

/** The run deadline: 5 minutes, or LOUPE_WORKFLOW_RUN_DEADLINE_MS. */
export const runDeadlineMs = () => config().LOUPE_WORKFLOW_RUN_DEADLINE_MS;

const clip = (s: string, n = MAX_ERROR_CHARS) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);
const messageOf = (e: unknown) => clip(isAppError(e) ? e.message : 'The step failed unexpectedly.');

interface StepResult {
  stepId: string;
  name: string;
  order: number;
  connectionId: string | null;
  status: 'SUCCESS' | 'FAILED' | 'SKIPPED' | 'TIMED_OUT';
  rowCount: number;
  columns: string[];
  truncated: boolean;
  executionTimeMs: number;
  conditionMet: boolean;
  error: string | null;
  errorCode: string | null;
}

/** The step results as stored: every step's facts, and its first rows as far as the byte bound allows. */
export function boundedStepResults(results: StepResult[], outputs: StepOutput[]): string {
  const budget =
    Math.floor(
      (STEP_RESULTS_MAX_BYTES - Buffer.byteLength(JSON.stringify(results))) / Math.max(1, results.length),
    ) - 64;
  const withRows = results.map((r, i) => {
    const rows: unknown[] = [];
    let used = 2;
    for (const row of outputs[i]?.rows ?? []) {
      const size = Buffer.byteLength(JSON.stringify(row)) + 1;
      if (used + size > budget) break;
      rows.push(row);
      used += size;
    }
    return { ...r, rows, rowsStored: rows.length };
  });
  const text = JSON.stringify(withRows);
  return Buffer.byteLength(text) <= STEP_RESULTS_MAX_BYTES
    ? text
    : JSON.stringify(results.map((r) => ({ ...r, rows: [], rowsStored: 0 })));
}

function boundedActionResults(results: Record<string, unknown>[]): string {
  const text = JSON.stringify(results);
  if (Buffer.byteLength(text) <= ACTION_RESULTS_MAX_BYTES) return text;
  return JSON.stringify(
    results.map(({ summary: _s, ...r }) => ({ ...r, summary: { omitted: 'too large' } })),
  );
}

export interface RunRequest {
  /** Whose rights run the steps: the caller; for a scheduled run, its publisher as the organization has them now. */
  ctx: AuthContext;
  workflow: Pick<WorkflowRecord, 'orgId' | 'id'>;
  definition: Definition;
  trigger: RunTrigger;
  definitionVersion: number | null;
  draftRevision: number;
  scheduledFor: string | null;
  /** ACTION_TEST: only this action, sent even when a stopIfEmpty step is empty. */
  onlyActionOrder?: number;
  /** The run's number when its claimer allotted it already (scheduled runs); else the next one. */
  sequence?: number;
}

class DeadlinePassed extends Error {}

/** The run's number is taken: another claimer of the same due time started it (nothing is run twice). */
export class RunAlreadyStarted extends Error {}

/** Resolves `work`, or rejects with DeadlinePassed at `deadlineAt`. */
async function beforeDeadline<T>(work: Promise<T>, deadlineAt: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      work,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new DeadlinePassed()), Math.max(0, deadlineAt - Date.now()));
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Executes one run to its end and returns it with its attempts. Run status (decisions §8): a failed
 * step → FAILED (no actions); a `stopIfEmpty` step with no rows → CONDITION_NOT_MET (later steps and
 * all actions skipped); a failed critical action → FAILED; only non-critical actions failed →
 * PARTIAL_SUCCESS; the deadline passed → TIMED_OUT; else SUCCESS. The terminal write is conditional on
 * the run still RUNNING (the sweep may have closed it); events go to the outbox once, by whoever
 * closed the run.
 */
export async function executeRun(req: RunRequest) {
  return continueRun(await startRun(req), req);
}

/**
 * The run's record, RUNNING from now until its deadline (the sweep closes it if nobody finishes it).
 * RunAlreadyStarted when `req.sequence` is taken (one conditional write: of two claimers, one starts).
 */
export async function startRun(req: Omit<RunRequest, 'ctx'>): Promise<RunRecord> {
  const { workflow: w, definition: d } = req;
  const sequence = req.sequence ?? (await runStore.nextSequence(w.orgId, w.id));
  const started = Date.now();
  const run: RunRecord = {
    id: newId(),
    orgId: w.orgId,
    workflowId: w.id,
    workflowName: d.name,
    sequence,
    trigger: req.trigger,
    status: 'RUNNING',
    definitionVersion: req.definitionVersion,
    draftRevision: req.draftRevision,
    scheduledFor: req.scheduledFor,
    stepResults: null,
    actionResults: null,
    durationMs: null,
    error: null,
    startedAt: new Date(started).toISOString(),
    completedAt: null,
    deadlineAt: started + runDeadlineMs(),
  };
  if (!(await runStore.start(run))) throw new RunAlreadyStarted();
  return run;
}

/** Every step of the definition, not run yet (SKIPPED until it runs). */
const unrunSteps = (d: Definition): StepResult[] =>
  d.steps.map((s) => ({
    stepId: s.id,
    name: s.name,
    order: s.order,
    connectionId: stepConnection(d, s),
    status: 'SKIPPED',
    rowCount: 0,
    columns: [],
    truncated: false,
    executionTimeMs: 0,
    conditionMet: true,
    error: null,
    errorCode: null,
  }));

/**
 * A step's connection is not assigned to the member the run acts for (as the organization has the member
 * now): the step fails with this before anything reaches the database. The connection is named; a member
 * reading the run without that connection gets the error withheld (forReader).
 */
async function notAssigned(ctx: AuthContext, trigger: RunTrigger, connectionId: string) {
  const conn = await connectionStore.get(ctx.orgId, connectionId);
  if (!conn) return notFound('Connection');
  const who = trigger === 'SCHEDULE' ? "the workflow's publisher" : 'the user who started this run';
  const fix =
    trigger === 'SCHEDULE'
      ? `An admin assigns it (PATCH /members/${ctx.userId} with connectionIds), or someone with access to it publishes the workflow again.`
      : `An admin assigns it (PATCH /members/${ctx.userId} with connectionIds).`;
  return new AppError(
    403,
    'CONNECTION_NOT_ASSIGNED',
    `Connection "${conn.name}" (${connectionId}) is not assigned to ${who} ${ctx.userId}, a member: the step was not run. ${fix}`,
  );
}

/** Executes a started run to its end (steps, then actions) and returns it with its attempts. */
export async function continueRun(run: RunRecord, req: Omit<RunRequest, 'workflow'>) {
  const { ctx, definition: d } = req;
  const w = { orgId: run.orgId, id: run.workflowId };
  const { sequence } = run;
  const started = Date.parse(run.startedAt);

  const results = unrunSteps(d);
  const outputs: StepOutput[] = d.steps.map((s) => ({ name: s.name, columns: [], rows: [], rowCount: 0 }));
  const actionResults: Record<string, unknown>[] = [];
  let status: RunStatus = 'SUCCESS';
  let error: string | null = null;
  let actionsReached = false;

  const work = async () => {
    for (const [i, s] of d.steps.entries()) {
      const r = results[i];
      const connectionId = stepConnection(d, s);
      try {
        if (!connectionId) throw new AppError(400, 'VALIDATION_ERROR', 'The step has no connection.');
        if (!isAdmin(ctx) && !ctx.connectionIds.includes(connectionId))
          throw await notAssigned(ctx, run.trigger, connectionId);
        const res = await beforeDeadline(
          executeReadOnly(ctx, connectionId, { sql: s.query, source: 'workflow', maxRows: RUN_MAX_ROWS }),
          run.deadlineAt,
        );
        Object.assign(r, {
          status: 'SUCCESS',
          rowCount: res.rowCount,
          columns: res.columns,
          truncated: !!res.truncated,
          executionTimeMs: res.executionTime,
        });
        outputs[i] = { name: s.name, columns: res.columns, rows: res.rows, rowCount: res.rowCount };
      } catch (e) {
        if (e instanceof DeadlinePassed) {
          r.status = 'TIMED_OUT';
          throw e;
        }
        Object.assign(r, {
          status: 'FAILED',
          error: messageOf(e),
          errorCode: isAppError(e) ? e.code : 'INTERNAL_ERROR',
        });
        status = 'FAILED';
        error = `Step ${i + 1} ("${s.name}") failed: ${r.error}`;
        return;
      }
      if (s.stopIfEmpty && r.rowCount === 0) {
        r.conditionMet = false;
        if (req.onlyActionOrder === undefined) {
          status = 'CONDITION_NOT_MET';
          return;
        }
      }
    }
    const actions =
      req.onlyActionOrder === undefined
        ? d.actions
        : d.actions.filter((a) => a.order === req.onlyActionOrder);
    actionsReached = true;
    let criticalFailed = false;
    let optionalFailed = false;
    for (const a of actions) {
      const outcome: DeliverOutcome = await beforeDeadline(
        deliverAction({
          orgId: w.orgId,
          userId: ctx.userId,
          runId: run.id,
          workflow: { id: w.id, name: d.name },
          scheduledFor: req.scheduledFor,
          steps: outputs,
          action: { id: a.id, order: a.order, type: a.type, config: a.config },
          deadline: run.deadlineAt,
          onAttempt: (attempt: ActionAttempt) => runStore.putAttempt(w.orgId, w.id, sequence, { ...attempt }),
        }),
        run.deadlineAt,
      );
      // A delivery's own timeout is cut to the time left (webhook.ts, email-delivery.ts), so it ends at the
      // deadline too: whichever timer fires first, a delivery that failed with the deadline passed is the
      // run passing its deadline, not the action failing.
      if (!outcome.success && Date.now() >= run.deadlineAt) throw new DeadlinePassed();
      actionResults.push({
        actionId: a.id,
        order: a.order,
        type: a.type,
        success: outcome.success,
        critical: outcome.critical,
        attempts: outcome.attempts.length,
        error: outcome.error ? clip(outcome.error) : null,
        summary: outcome.summary,
      });
      if (!outcome.success) {
        if (outcome.critical) criticalFailed = true;
        else optionalFailed = true;
        error ??= `Action ${a.order} (${a.type}) failed: ${clip(outcome.error ?? 'delivery failed')}`;
      }
    }
    status = criticalFailed ? 'FAILED' : optionalFailed ? 'PARTIAL_SUCCESS' : 'SUCCESS';
  };

  let interrupted = false;
  try {
    await work();
  } catch (e) {
    if (e instanceof DeadlinePassed) {
      status = 'TIMED_OUT';
      error = `The run passed its ${Math.round(runDeadlineMs() / 1000)}-second deadline.`;
    } else {
      logger().error('Workflow run failed unexpectedly', {
        workflowId: w.id,
        runId: run.id,
        error: String(e),
      });
      status = 'FAILED';
      error = 'The run failed unexpectedly.';
      interrupted = true;
    }
  }
  const completed = Date.now();
  // A delivery cut by the deadline (or by an unexpected failure) leaves no attempt RUNNING.
  if (status === 'TIMED_OUT' || interrupted)
    await runStore.closeAttempts(w.orgId, w.id, sequence, CUT_ATTEMPT);
  const finished = await runStore.finish(run, {
    status,
    stepResults: boundedStepResults(results, outputs),
    actionResults: actionsReached ? boundedActionResults(actionResults) : null,
    durationMs: completed - started,
    error,
    completedAt: new Date(completed).toISOString(),
  });
  const [view] = await Promise.all([runView(w.orgId, w.id, sequence), finished && recordRunEvents(finished)]);
  return view;
}

/** `workflow.run.completed` for every terminal run, plus `workflow.run.failed` for FAILED or TIMED_OUT. */
async function recordRunEvents(r: RunRecord) {
  count('workflowRuns', { trigger: r.trigger, outcome: r.status });
  const data = {
    workflowId: r.workflowId,
    workflowName: r.workflowName,
    runId: r.id,
    status: r.status,
    trigger: r.trigger,
    definitionVersion: r.definitionVersion ?? null,
    scheduledFor: r.scheduledFor ?? null,
    startedAt: r.startedAt,
    completedAt: r.completedAt,
    durationMs: r.durationMs,
    error: r.error ?? null,
  };
  try {
    await outbox().record(r.orgId, 'workflow.run.completed', data);
    if (r.status === 'FAILED' || r.status === 'TIMED_OUT')
      await outbox().record(r.orgId, 'workflow.run.failed', data);
  } catch (e) {
    logger().error('Recording workflow run events failed', { runId: r.id, error: String(e) });
  }
}

export type RunView = ReturnType<typeof toRunView>;

function toRunView(run: Record<string, unknown>, attempts: Record<string, unknown>[]) {
  return {
    id: String(run.id),
    workflowId: String(run.workflowId),
    trigger: run.trigger as RunTrigger,
    status: run.status as RunStatus,
    definitionVersion: (run.definitionVersion as number | null) ?? null,
    draftRevision: Number(run.draftRevision),
    scheduledFor: (run.scheduledFor as string | null) ?? null,
    stepResults: (run.stepResults as string | null) ?? null,
    actionResults: (run.actionResults as string | null) ?? null,
    durationMs: (run.durationMs as number | null) ?? null,
    error: (run.error as string | null) ?? null,
    startedAt: String(run.startedAt),
    completedAt: (run.completedAt as string | null) ?? null,
    actionAttempts: attempts
      .sort((a, b) => Number(a.actionOrder) - Number(b.actionOrder) || Number(a.attempt) - Number(b.attempt))
      .map((a) => ({
        id: String(a.id),
        runId: String(a.runId),
        actionId: (a.actionId as string | null) ?? null,
        actionOrder: Number(a.actionOrder),
        attempt: Number(a.attempt),
        status: String(a.status),
        method: String(a.method),
        url: String(a.url),
        requestBodyBytes: Number(a.requestBodyBytes ?? 0),
        statusCode: (a.statusCode as number | null) ?? null,
        durationMs: (a.durationMs as number | null) ?? null,
        responseHeaders: (a.responseHeaders as string | null) ?? null,
        responseBody: (a.responseBody as string | null) ?? null,
        error: (a.error as string | null) ?? null,
        startedAt: String(a.startedAt),
        completedAt: (a.completedAt as string | null) ?? null,
      })),
  };
}

/** Runs (newest first) with their attempts from the items of one page Query. */
function groupRuns(items: Item[]): RunView[] {
  const runs: RunView[] = [];
  let attempts: Record<string, unknown>[] = [];
  for (const item of items) {
    // Newest first: a run's attempts (`RUN#n#A#…`) come right before the run item (`RUN#n`).
    if (item.type === 'workflow-attempt') attempts.push(stripRun(item));
    else if (item.type === 'workflow-run') {
      runs.push(toRunView(stripRun(item), attempts));
      attempts = [];
    }
  }
  return runs;
}

export async function runView(orgId: string, workflowId: string, sequence: number): Promise<RunView> {
  const [run] = groupRuns(await runStore.page(orgId, workflowId, sequence, sequence));
  if (!run) throw notFound('Workflow run');
  return run;
}

/** GET /workflows/{id}/runs: newest first; the page is one Query over a sequence range (runs and attempts). */
export async function listRuns(ctx: AuthContext, id: string, q: PageQuery) {
  await findWorkflow(ctx, id);
  const total = await runStore.total(ctx.orgId, id);
  const hi = total - (q.page - 1) * q.pageSize;
  const lo = Math.max(1, hi - q.pageSize + 1);
  const data = hi >= 1 ? groupRuns(await runStore.page(ctx.orgId, id, lo, hi)) : [];
  return { data: data.map((r) => forReader(ctx, r)), pagination: pagination(total, q.page, q.pageSize) };
}

/**
 * A run as a member may read it: one whose steps read a connection not assigned to the member (an
 * earlier published version may have used other connections than the draft the member can see) keeps
 * its status and timing, but its rows, errors and delivery responses are withheld.
 */
function forReader(ctx: AuthContext, r: RunView): RunView {
  if (isAdmin(ctx)) return r;
  let connections: unknown[] = [];
  try {
    connections = (JSON.parse(r.stepResults ?? '[]') as { connectionId?: unknown }[]).map(
      (s) => s.connectionId,
    );
  } catch {
    connections = [undefined];
  }
  if (connections.every((c) => c === null || (typeof c === 'string' && ctx.connectionIds.includes(c))))
    return r;
  return {
    ...r,
    stepResults: null,
    actionResults: null,
    error: r.error === null ? null : 'Withheld: this run read a connection that is not assigned to you.',
    actionAttempts: r.actionAttempts.map((a) => ({
      ...a,
      responseHeaders: null,
      responseBody: null,
      error: a.error === null ? null : 'Withheld',
    })),
  };
}

const SOURCE_UNAVAILABLE = new Set(['NOT_FOUND', 'CONNECTION_INACTIVE', 'CONNECTION_FAILED']);

/**
 * POST /workflows/{id}/preview: every draft step, at most 100 rows each; no action, no run, nothing
 * written by the workflow (the statements appear in the connections' query history like any other).
 * A source that cannot be reached (connection missing, inactive, or failing) is 422 PREVIEW_FAILED.
 */
export async function previewWorkflow(ctx: AuthContext, id: string) {
  const w = await findWorkflow(ctx, id);
  const d = w.draft;
  const steps = [];
  for (const [i, s] of d.steps.entries()) {
    const connectionId = stepConnection(d, s);
    try {
      if (!connectionId) throw notFound('Connection');
      const res = await executeReadOnly(ctx, connectionId, {
        sql: s.query,
        source: 'workflow',
        maxRows: PREVIEW_MAX_ROWS,
      });
      steps.push({
        stepId: s.id,
        name: s.name,
        status: 'SUCCESS' as const,
        rowCount: res.rowCount,
        columns: res.columns,
        rows: res.rows,
        executionTimeMs: res.executionTime,
        conditionMet: !(s.stopIfEmpty && res.rowCount === 0),
        error: null,
      });
    } catch (e) {
      if (isAppError(e) && SOURCE_UNAVAILABLE.has(e.code))
        throw new AppError(
          422,
          'PREVIEW_FAILED',
          `Step ${i + 1} ("${s.name}") could not be previewed: ${e.message}`,
          {
            stepId: s.id,
            step: i + 1,
            connectionId,
            reason: e.code,
            ...(e.details && typeof e.details === 'object' ? { cause: e.details } : {}),
          },
        );
      steps.push({
        stepId: s.id,
        name: s.name,
        status: 'FAILED' as const,
        rowCount: 0,
        columns: [],
        rows: [],
        executionTimeMs: 0,
        conditionMet: true,
        error: messageOf(e),
      });
    }
  }
  const status = steps.some((s) => s.status === 'FAILED')
    ? 'FAILED'
    : steps.some((s) => !s.conditionMet)
      ? 'CONDITION_NOT_MET'
      : 'READY';
  return {
    workflowId: w.id,
    draftRevision: w.draftRevision,
    status,
    wouldRunActions: status === 'READY' && d.actions.length > 0,
    actionsConfigured: d.actions.length,
    rowsLimitedTo: PREVIEW_MAX_ROWS,
    steps,
  } as const;
}

/** The keyId of a scheduled run's context: no API key acts, the scheduler does (for the publisher). */
const SCHEDULER = 'scheduler';

export interface ScheduledPayload {
  orgId?: unknown;
  workflowId?: unknown;
  version?: unknown;
  scheduledTime?: unknown;
}

/**
 * One scheduled invocation (the runner worker): runs the workflow's current published version when the
 * workflow still exists, is active and scheduled; the due time is claimed first with one conditional
 * write on (workflowId, scheduledFor), so a repeated delivery of the same due time (or the missed-runs
 * sweep's catch-up of it) runs nothing, and the run's number is recorded on the claim before the run
 * starts, so that the sweep can tell a claim whose runner stopped (missed-runs.ts). The run acts as the workflow's publisher (the user who last published or reactivated it) with the role
 * and assigned connections the user has now: a member's step on a connection no longer assigned fails
 * (no actions), and a publisher removed from the organization fails the run before any step.
 */
export async function runScheduled(p: ScheduledPayload, now = Date.now()) {
  const found = await scheduledWorkflow(p);
  if ('skipped' in found) return found;
  const { w, version } = found;
  const scheduledFor = scheduledMinute(
    typeof p.scheduledTime === 'string' ? p.scheduledTime : undefined,
    now,
  );
  const token = newId();
  if (!(await runStore.claimSlot(w.orgId, w.id, scheduledFor, token)))
    return { skipped: 'duplicate' as const };
  measureStartDelay(typeof p.scheduledTime === 'string' ? p.scheduledTime : undefined, now);
  await watchFromRun(w, version.definition, scheduledFor, now);
  return runClaimedSlot({ w, version, scheduledFor, token });
}

/** The workflow a scheduled invocation is for, with its published version: only while active and scheduled. */
export async function scheduledWorkflow(p: { orgId?: unknown; workflowId?: unknown }) {
  if (typeof p?.orgId !== 'string' || typeof p.workflowId !== 'string')
    return { skipped: 'invalid payload' as const };
  const w = await workflowStore.get(p.orgId, p.workflowId);
  if (!w || w.deleting || !w.isActive || w.publishedDraftRevision === null || w.publishedVersion === null)
    return { skipped: 'inactive' as const };
  const version = await workflowStore.getVersion(w.orgId, w.id, w.publishedDraftRevision);
  if (version?.definition.triggerType !== 'SCHEDULE') return { skipped: 'not scheduled' as const };
  return { w, version };
}

type Scheduled = Exclude<Awaited<ReturnType<typeof scheduledWorkflow>>, { skipped: string }>;

/**
 * Runs a due time this invocation claimed (`token`): allots the run its number and records it on the
 * claim (one conditional write, refused when the missed-runs sweep took the claim over meanwhile),
 * unless the claim carries a number already (taken over from a claimer that stopped before starting the
 * run), then runs it as the publisher. A number another claimer started first runs nothing.
 */
export async function runClaimedSlot(
  c: Scheduled & { scheduledFor: string; token: string; sequence?: number },
) {
  const { w, version, scheduledFor } = c;
  let sequence = c.sequence;
  if (sequence === undefined) {
    sequence = await runStore.nextSequence(w.orgId, w.id);
    if (!(await runStore.bindSlot(w.orgId, w.id, scheduledFor, c.token, sequence)))
      return { skipped: 'duplicate' as const };
  }
  const req = {
    workflow: w,
    definition: version.definition,
    trigger: 'SCHEDULE' as const,
    definitionVersion: w.publishedVersion,
    draftRevision: version.draftRevision,
    scheduledFor,
    sequence,
  };
  // The publisher as the organization has them now: their role and assigned connections, no more.
  const publisher = w.publishedBy ?? version.publishedBy;
  try {
    const ctx = await actingAs(w.orgId, publisher, SCHEDULER, ['workflows']);
    const run = ctx
      ? await executeRun({ ...req, ctx })
      : await refuseRun(
          req,
          `The workflow's publisher ${publisher} is no longer a member; publish it again as a current member.`,
        );
    return { runId: run.id, status: run.status };
  } catch (e) {
    if (e instanceof RunAlreadyStarted) return { skipped: 'duplicate' as const };
    throw e;
  }
}

/**
 * A workflow published before schedule watches existed gets its watch from its first scheduled run: the
 * run's due time is a point of the schedule (a rate's grid starts there). Never fails the run.
 */
async function watchFromRun(w: WorkflowRecord, d: Definition, scheduledFor: string, now: number) {
  if (!d.triggerConfig) return;
  try {
    await armWatch(w, d.triggerConfig, now, { ranAt: Date.parse(scheduledFor), onlyIfAbsent: true });
  } catch (e) {
    logger().warn('arming the schedule watch failed', { workflowId: w.id, error: String(e) });
  }
}

/**
 * How late a scheduled run starts: from the due time the scheduler gives (EventBridge Scheduler's
 * `<aws.scheduler.scheduled-time>`, the local scheduler's own) to now, once per claimed due time (a
 * repeated delivery is not measured again). Later than LOUPE_SCHEDULE_LATE_MS also counts in
 * ScheduledRunsLate, which the ScheduledRunsLate alarm watches (docs/operations/runbook.md).
 */
function measureStartDelay(scheduledTime: string | undefined, now: number) {
  const due = scheduledTime ? Date.parse(scheduledTime) : Number.NaN;
  if (!Number.isFinite(due)) return;
  const delay = Math.max(0, now - due);
  observe('scheduledRunDelay', delay, {});
  if (delay > config().LOUPE_SCHEDULE_LATE_MS) {
    count('scheduledRunsLate', {});
    logger().warn('scheduled workflow run started late', { scheduledTime, delayMs: delay });
  }
}

/** A run that may not start (its user is gone): recorded FAILED with `error`, no step run, nothing sent. */
async function refuseRun(req: Omit<RunRequest, 'ctx'>, error: string) {
  const run = await startRun(req);
  const finished = await runStore.finish(run, {
    status: 'FAILED',
    stepResults: boundedStepResults(unrunSteps(req.definition), []),
    actionResults: null,
    durationMs: 0,
    error,
    completedAt: nowIso(),
  });
  const [view] = await Promise.all([
    runView(run.orgId, run.workflowId, run.sequence),
    finished && recordRunEvents(finished),
  ]);
  return view;
}

/** The sweep: runs left RUNNING past their deadline (a crashed runner) become TIMED_OUT, with their events. */
export async function sweepStaleRuns(now = Date.now()): Promise<number> {
  let closed = 0;
  for (const item of await runStore.overdue(now - SWEEP_GRACE_MS)) {
    const r = stripRun(item) as unknown as RunRecord;
    // Attempts first: a sweep interrupted between the two writes finds the run again next time.
    await runStore.closeAttempts(r.orgId, r.workflowId, r.sequence, CUT_ATTEMPT);
    const finished = await runStore.finish(r, {
      status: 'TIMED_OUT',
      stepResults: r.stepResults ?? null,
      actionResults: r.actionResults ?? null,
      durationMs: Math.max(0, r.deadlineAt - Date.parse(r.startedAt)),
      error:
        'The run stopped without finishing (the runner was interrupted) and was closed after its deadline.',
      completedAt: nowIso(),
    });
    if (finished) {
      closed++;
      await recordRunEvents(finished);
    }
  }
  return closed;
}
