import type { AuthContext } from '../auth/context';
import { isAdmin } from '../auth/context';
import { assertCredentialsUsable } from '../credentials/access';
import { assertCanChange } from '../dashboards/access';
import { pageOf } from '../http/envelope';
import type { PageQuery } from '../http/schemas';
import { AppError, conflict, notFound, validationError } from '../platform/errors';
import { newId, nowIso } from '../platform/ids';
import { scheduler } from '../platform/scheduler';
import { sanitizeActionConfig } from './actions/view';
import type { WorkflowCreate, WorkflowUpdate } from './api';
import { gridPointAtOrAfter, rateOf } from './due-times';
import { scheduleExpressionOf, scheduleNameOf } from './schedule';
import { armWatch } from './schedule-watch';
import { type Definition, type WorkflowRecord, watchStore, workflowStore } from './store';

// Building a draft (steps, action rules, outbound URL checks) loads with the first create or update, a
// lazy chunk: most requests list or read workflows.
type DefinitionModule = typeof import('./definition');
const definition = (): Promise<DefinitionModule> => import('./definition');

/** The runner worker (shared/platform/workers.ts): the Scheduler's target for scheduled runs. */
export const RUNNER_WORKER = 'workflow-runner';

export function workflowView(w: WorkflowRecord) {
  const d = w.draft;
  return {
    id: w.id,
    orgId: w.orgId,
    name: d.name,
    description: d.description,
    connectionId: d.connectionId,
    projectId: d.projectId,
    triggerType: d.triggerType,
    triggerConfig: d.triggerConfig ? JSON.stringify(d.triggerConfig) : null,
    isActive: w.isActive,
    draftRevision: w.draftRevision,
    publishedVersion: w.publishedVersion ?? null,
    publishedDraftRevision: w.publishedDraftRevision ?? null,
    publishedAt: w.publishedAt ?? null,
    hasUnpublishedChanges: w.publishedHash ? w.publishedHash !== w.draftHash : true,
    createdBy: w.createdBy,
    createdAt: w.createdAt,
    updatedAt: w.updatedAt,
    steps: d.steps.map((s) => ({
      id: s.id,
      name: s.name,
      query: s.query,
      stopIfEmpty: s.stopIfEmpty,
      order: s.order,
      connectionId: s.connectionId,
    })),
    actions: d.actions.map((a) => ({
      id: a.id,
      type: a.type,
      config: sanitizeActionConfig(a.type, a.config),
      order: a.order,
    })),
  };
}

/** Members see a workflow only when every connection it uses is assigned to them (404 otherwise). */
export const visibleTo = (ctx: AuthContext, w: WorkflowRecord) =>
  isAdmin(ctx) || w.connectionIds.every((c) => ctx.connectionIds.includes(c));

export async function findWorkflow(ctx: AuthContext, id: string): Promise<WorkflowRecord> {
  const w = await workflowStore.get(ctx.orgId, id);
  if (!w || w.deleting || !visibleTo(ctx, w)) throw notFound('Workflow');
  return w;
}

export async function listWorkflows(ctx: AuthContext, q: PageQuery) {
  const all = (await workflowStore.list(ctx.orgId))
    .filter((w) => !w.deleting && visibleTo(ctx, w))
    .sort((a, b) => b.createdAt.localeCompare(a.createdAt) || a.id.localeCompare(b.id));
  return pageOf(all.map(workflowView), q);
}

export async function getWorkflow(ctx: AuthContext, id: string) {
  return workflowView(await findWorkflow(ctx, id));
}

function draftFields(def: DefinitionModule, d: Definition) {
  def.assertDefinitionSize(d);
  return {
    draft: d,
    draftHash: def.definitionHash(d),
    connectionIds: def.connectionsOf(d),
    draftCredentialIds: def.credentialsOf(d),
  };
}

export async function createWorkflow(ctx: AuthContext, input: WorkflowCreate) {
  const def = await definition();
  const connectionId = input.connectionId ?? null;
  const draft: Definition = {
    name: input.name,
    description: input.description ?? '',
    connectionId,
    projectId: input.projectId ?? null,
    triggerType: input.triggerType,
    triggerConfig: def.parseTriggerConfig(input.triggerConfig),
    steps: await def.buildSteps(ctx, input.steps, connectionId),
    actions: await def.buildActions(ctx.orgId, input.actions ?? []),
  };
  // A member names only credentials an admin shared with members (403; 404 for one it cannot know).
  await assertCredentialsUsable(ctx, def.credentialsOf(draft));
  const now = nowIso();
  const w: WorkflowRecord = {
    id: newId(),
    orgId: ctx.orgId,
    ...draftFields(def, draft),
    draftRevision: 1,
    publishedCredentialIds: [],
    isActive: false,
    publishedVersion: null,
    publishedDraftRevision: null,
    publishedAt: null,
    publishedHash: null,
    publishedBy: null,
    createdBy: ctx.userId,
    createdAt: now,
    updatedAt: now,
  };
  await workflowStore.create(w);
  return workflowView(w);
}

const DRAFT_FIELDS = [
  'name',
  'description',
  'connectionId',
  'projectId',
  'triggerType',
  'triggerConfig',
  'steps',
  'actions',
] as const;

const revisionConflict = (current: number) =>
  conflict(
    'DRAFT_REVISION_CONFLICT',
    `The draft changed meanwhile: it is at revision ${current}. Read it again and resubmit with expectedDraftRevision ${current}.`,
    { currentDraftRevision: current },
  );

/** The new draft from a PATCH body (unchanged parts kept; steps/actions replaced wholesale). */
async function nextDraft(
  def: DefinitionModule,
  ctx: AuthContext,
  w: WorkflowRecord,
  input: WorkflowUpdate,
): Promise<Definition> {
  const d = w.draft;
  const connectionId = input.connectionId === undefined ? d.connectionId : input.connectionId;
  const stepsInput =
    input.steps ??
    (input.connectionId !== undefined
      ? d.steps.map((s) => ({ ...s, name: s.name, connectionId: s.connectionId }))
      : undefined);
  return {
    name: input.name ?? d.name,
    description: input.description ?? d.description,
    connectionId,
    projectId: input.projectId === undefined ? d.projectId : input.projectId,
    triggerType: input.triggerType ?? d.triggerType,
    triggerConfig:
      input.triggerConfig === undefined ? d.triggerConfig : def.parseTriggerConfig(input.triggerConfig),
    steps: stepsInput ? await def.buildSteps(ctx, stepsInput, connectionId, d.steps) : d.steps,
    actions: input.actions ? await def.buildActions(ctx.orgId, input.actions, d.actions) : d.actions,
  };
}

/**
 * PATCH: only the workflow's creator and admins may change, publish or deactivate it (403 for other
 * members who see it, before anything else is checked). A draft change needs `expectedDraftRevision`
 * (428 without, 409 DRAFT_REVISION_CONFLICT when stale) and is one conditional write of the whole draft
 * item. `isActive: true` publishes the draft
 * (after it is saved, when the same request changes it): publish errors are 400, unacknowledged
 * warnings 422, both before anything is written. `isActive: false` deactivates and removes the schedule.
 */
export async function updateWorkflow(ctx: AuthContext, id: string, input: WorkflowUpdate) {
  let w = await findWorkflow(ctx, id);
  assertCanChange(ctx, w, 'workflow');
  const changesDraft = DRAFT_FIELDS.some((f) => input[f] !== undefined);
  if (changesDraft && input.expectedDraftRevision === undefined)
    throw new AppError(
      428,
      'PRECONDITION_REQUIRED',
      'expectedDraftRevision is required to change the draft (send the draftRevision you last read).',
      { currentDraftRevision: w.draftRevision },
    );
  if (input.expectedDraftRevision !== undefined && input.expectedDraftRevision !== w.draftRevision)
    throw revisionConflict(w.draftRevision);
  if (!changesDraft && input.isActive === undefined) {
    if (input.acknowledgedWarnings !== undefined)
      throw validationError('acknowledgedWarnings only applies together with isActive: true.', {
        issues: [
          { path: 'body.acknowledgedWarnings', message: 'needs isActive: true', code: 'invalid_value' },
        ],
      });
    return workflowView(w);
  }

  const def = changesDraft ? await definition() : undefined;
  const draft = def ? await nextDraft(def, ctx, w, input) : w.draft;
  const fields = def ? draftFields(def, draft) : undefined;
  const publishing = input.isActive === true;
  // The actions the request names, and those a publisher puts on the schedule (it is the run's user).
  if (input.actions !== undefined || publishing)
    await assertCredentialsUsable(ctx, fields?.draftCredentialIds ?? w.draftCredentialIds);
  const alreadyLive = !changesDraft && w.isActive && w.publishedDraftRevision === w.draftRevision;
  if (publishing && alreadyLive) return workflowView(await publish(ctx, w)); // nothing new to check
  if (publishing) await assertPublishable(ctx, draft, input.acknowledgedWarnings ?? []);

  if (fields) {
    const saved = await workflowStore.replaceDraft(ctx.orgId, id, w.draftRevision, {
      ...fields,
      updatedAt: nowIso(),
    });
    if (!saved) {
      const now = await workflowStore.get(ctx.orgId, id);
      if (!now || now.deleting) throw notFound('Workflow');
      throw revisionConflict(now.draftRevision);
    }
    w = saved;
  }
  if (publishing) w = await publish(ctx, w);
  else if (input.isActive === false) w = await deactivate(ctx, w);
  return workflowView(w);
}

async function assertPublishable(ctx: AuthContext, d: Definition, acknowledged: string[]) {
  // Lazily: the checks reach the connection layer, which listing or reading workflows does not need.
  const { publishProblems } = await import('./publish-checks');
  const { errors, warnings } = await publishProblems(ctx, d);
  if (errors.length)
    throw validationError(`The workflow cannot be published: ${errors.map((e) => e.message).join(' ')}`, {
      issues: errors,
    });
  const missing = warnings.filter((w) => !acknowledged.includes(w));
  if (missing.length)
    throw new AppError(
      422,
      'WARNINGS_NOT_ACKNOWLEDGED',
      'Publishing needs every warning acknowledged: resend the request with these exact strings in acknowledgedWarnings.',
      { warnings, unacknowledged: missing },
    );
}

/**
 * Stores the immutable published version (keyed by the draft revision it publishes; republishing an
 * unchanged draft reactivates the same version), commits it on the workflow item with one conditional
 * write (draft still at that revision), then creates or updates the schedule. The workflow item's
 * `publishedBy` is the user scheduled runs act as: publishing an unchanged live workflow again as another
 * user makes that user its publisher (the way to hand over a workflow whose publisher lost access).
 */
async function publish(ctx: AuthContext, w: WorkflowRecord): Promise<WorkflowRecord> {
  const same = w.publishedDraftRevision === w.draftRevision && w.publishedVersion !== null;
  if (same && w.isActive && w.publishedBy === ctx.userId) {
    await syncSchedule(w);
    return w;
  }
  const version = same ? w.publishedVersion! : (w.publishedVersion ?? 0) + 1;
  const publishedAt = same && w.publishedAt ? w.publishedAt : nowIso();
  const stored = await workflowStore.putVersion(ctx.orgId, {
    workflowId: w.id,
    version,
    draftRevision: w.draftRevision,
    definition: w.draft,
    publishedAt,
    publishedBy: ctx.userId,
  });
  if (!stored) throw revisionConflict(w.draftRevision);
  const committed = await workflowStore.commitPublish(
    ctx.orgId,
    w.id,
    { draftRevision: w.draftRevision, publishedVersion: w.publishedVersion ?? null },
    {
      publishedVersion: version,
      publishedDraftRevision: w.draftRevision,
      publishedAt,
      publishedHash: w.draftHash,
      publishedBy: ctx.userId,
      publishedCredentialIds: w.draftCredentialIds,
      updatedAt: nowIso(),
    },
  );
  if (!committed) {
    const now = await workflowStore.get(ctx.orgId, w.id);
    if (!now || now.deleting) throw notFound('Workflow');
    if (now.isActive && now.publishedDraftRevision === w.draftRevision) return now; // a concurrent identical publish
    throw revisionConflict(now.draftRevision);
  }
  await syncSchedule(committed);
  return committed;
}

async function deactivate(ctx: AuthContext, w: WorkflowRecord): Promise<WorkflowRecord> {
  const done = w.isActive ? await workflowStore.deactivate(ctx.orgId, w.id, nowIso()) : w;
  if (!done) throw notFound('Workflow');
  await scheduler().remove(scheduleNameOf(w.id));
  await watchStore.remove(w.orgId, w.id);
  return done;
}

/**
 * The schedule of an active published SCHEDULE workflow targets the runner with the workflow id and
 * version; anything else has none. The runner re-checks the workflow on every invocation, so a
 * schedule left behind by a race never runs anything. The schedule watch (schedule-watch.ts) is armed
 * first, so that a schedule change that fails after it is found by the missed-runs sweep, which calls
 * this again to repair it. A rate schedule is given the start of its grid (the watch's, kept while the
 * expression is unchanged), so that its due times are the same whole minutes in the scheduler, the
 * runs' `scheduledFor` and the watch.
 */
export async function syncSchedule(w: WorkflowRecord, now = Date.now()): Promise<void> {
  const name = scheduleNameOf(w.id);
  const version = w.publishedDraftRevision
    ? await workflowStore.getVersion(w.orgId, w.id, w.publishedDraftRevision)
    : undefined;
  const def = version?.definition;
  if (!w.isActive || !def || def.triggerType !== 'SCHEDULE' || !def.triggerConfig) {
    await scheduler().remove(name);
    await watchStore.remove(w.orgId, w.id);
    return;
  }
  const { expression, timezone } = scheduleExpressionOf(def.triggerConfig);
  const watch = await armWatch(w, def.triggerConfig, now);
  const every = rateOf(expression);
  await scheduler().upsert({
    name,
    expression,
    timezone,
    ...(every !== null && watch ? { startAt: new Date(gridPointAtOrAfter(watch.anchorAt, every, now)) } : {}),
    worker: RUNNER_WORKER,
    payload: {
      orgId: w.orgId,
      workflowId: w.id,
      version: w.publishedVersion,
      scheduledTime: '<aws.scheduler.scheduled-time>',
    },
  });
}

/**
 * DELETE (its creator and admins only, 403 for other members): hides the workflow at once (a `deleting`
 * mark), removes its schedule, then every item of its partition (versions, runs, attempts, slot claims),
 * then the workflow item. A repeated DELETE finishes
 * a cascade that was cut off; once everything is gone it is 404.
 */
export async function deleteWorkflow(ctx: AuthContext, id: string) {
  const w = await workflowStore.get(ctx.orgId, id);
  if (!w || !visibleTo(ctx, w)) throw notFound('Workflow');
  assertCanChange(ctx, w, 'workflow');
  if (!(await workflowStore.markDeleting(ctx.orgId, id))) throw notFound('Workflow');
  await scheduler().remove(scheduleNameOf(id));
  await workflowStore.purge(ctx.orgId, id);
  return { deleted: true as const };
}
