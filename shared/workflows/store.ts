import { db, type Item, strip } from '../platform/db/store';
import { padSeq } from '../platform/ids';
import type { ActionConfig, ActionType } from './actions';
import type { ScheduleConfig } from './schedule';

/**
 * Workflow records in the main table. Every key starts with the organization.
 *
 *  ORG#o / WF#<id>                       the workflow: the whole draft (fields, steps, actions) in one
 *                                        item, changed by one conditional write on `draftRevision`;
 *                                        publication state (isActive, publishedVersion, …)
 *  ORG#o#WF#<id> / PUB#<draftRevision>   an immutable published version (the definition at that revision)
 *  ORG#o#WF#<id> / RUNSEQ                run counter: `seq` = runs ever started (the history's total)
 *  ORG#o#WF#<id> / RUN#<seq>             one run
 *  ORG#o#WF#<id> / RUN#<seq>#A#<order>#<attempt>   one delivery attempt of that run
 *  ORG#o#WF#<id> / SLOT#<scheduledFor>   claim of a scheduled due time (deduplication): `runId` (the
 *                                        claim's token), then `sequence` of the run it starts (`boundAt`)
 *  ORG#o#WF#<id> / WATCH                 the schedule watch of an active scheduled workflow: its cadence
 *                                        and `dueAt`, the next due time the sweep checks for a run; gsi1
 *                                        keys `WFDUE` / `<dueAt>#<org>#<id>` (the missed-runs sweep's index)
 *  ORG#o#WF#<id> / JOB#<seq>             a manual run handed to the runner worker: whose rights and which
 *                                        definition it runs; claimed once (`claimedAt`), deleted at its end
 * A page of run history (newest first) is one Query over `RUN#<lo>` … `RUN#<hi>#~`: runs and their
 * attempts together. Runs still RUNNING carry gsi1 keys (`WFRUNNING`, by deadline) for the sweep.
 * The sweep reads its two global indexes by time (runs past their deadline, watches past their due
 * time plus the late threshold): one Query each across organizations, never a Scan.
 */
export interface StepDef {
  id: string;
  name: string;
  query: string;
  stopIfEmpty: boolean;
  order: number;
  connectionId: string | null;
}

export interface ActionDef {
  id: string;
  type: ActionType;
  config: ActionConfig;
  order: number;
}

/** The definition a run executes: the draft, or a published version. */
export interface Definition {
  name: string;
  description: string;
  connectionId: string | null;
  projectId: string | null;
  triggerType: 'MANUAL' | 'SCHEDULE';
  triggerConfig: ScheduleConfig | null;
  steps: StepDef[];
  actions: ActionDef[];
}

/** The connection a step runs on: its own, else the workflow's. */
export const stepConnection = (d: Pick<Definition, 'connectionId'>, s: StepDef) =>
  s.connectionId ?? d.connectionId;

export interface WorkflowRecord {
  id: string;
  orgId: string;
  draft: Definition;
  draftRevision: number;
  /** Hash of the draft's definition; equal to publishedHash when nothing is unpublished. */
  draftHash: string;
  /** Every connection the draft uses (workflow and step connections), for member visibility. */
  connectionIds: string[];
  /** Credentials the draft references; `publishedCredentialIds` those of the published version. */
  draftCredentialIds: string[];
  publishedCredentialIds: string[];
  isActive: boolean;
  publishedVersion: number | null;
  publishedDraftRevision: number | null;
  publishedAt: string | null;
  publishedHash: string | null;
  publishedBy: string | null;
  /** Set when a DELETE started: the workflow is gone for every reader, the cascade may still run. */
  deleting?: boolean;
  createdBy: string;
  createdAt: string;
  updatedAt: string;
}

export interface PublishedVersion {
  workflowId: string;
  version: number;
  draftRevision: number;
  definition: Definition;
  publishedAt: string;
  publishedBy: string;
}

export type RunTrigger = 'MANUAL' | 'SCHEDULE' | 'ACTION_TEST';
export type RunStatus =
  | 'PENDING'
  | 'RUNNING'
  | 'SUCCESS'
  | 'PARTIAL_SUCCESS'
  | 'CONDITION_NOT_MET'
  | 'FAILED'
  | 'TIMED_OUT';
export const TERMINAL: RunStatus[] = [
  'SUCCESS',
  'PARTIAL_SUCCESS',
  'CONDITION_NOT_MET',
  'FAILED',
  'TIMED_OUT',
];

export interface RunRecord {
  id: string;
  orgId: string;
  workflowId: string;
  workflowName: string;
  sequence: number;
  trigger: RunTrigger;
  status: RunStatus;
  definitionVersion: number | null;
  /** The draft revision the run executed (an extension: drafts have no version). */
  draftRevision: number;
  scheduledFor: string | null;
  stepResults: string | null;
  actionResults: string | null;
  durationMs: number | null;
  error: string | null;
  startedAt: string;
  completedAt: string | null;
  /** Epoch ms after which the run counts as timed out. */
  deadlineAt: number;
}

export const orgPk = (orgId: string) => `ORG#${orgId}`;
export const wfSk = (id: string) => `WF#${id}`;
export const wfPk = (orgId: string, id: string) => `ORG#${orgId}#WF#${id}`;
const pubSk = (rev: number) => `PUB#${padSeq(rev)}`;
const RUNSEQ = 'RUNSEQ';
export const runSk = (seq: number) => `RUN#${padSeq(seq)}`;
const attemptSk = (seq: number, order: number, attempt: number) =>
  `${runSk(seq)}#A#${String(order).padStart(4, '0')}#${String(attempt).padStart(3, '0')}`;
const slotSk = (scheduledFor: string) => `SLOT#${scheduledFor}`;
const jobSk = (seq: number) => `JOB#${padSeq(seq)}`;
/** A manual run's job is kept at most this long (TTL, cleanup only: a run ends within minutes). */
const JOB_RETENTION_S = 2 * 86_400;
const RUNNING_PK = 'WFRUNNING';
const runningSk = (r: Pick<RunRecord, 'deadlineAt' | 'orgId' | 'workflowId' | 'sequence'>) =>
  `${String(r.deadlineAt).padStart(15, '0')}#${r.orgId}#${r.workflowId}#${padSeq(r.sequence)}`;

/** A slot claim is kept this long (TTL, cleanup only; EventBridge retries for at most 24 hours). */
const SLOT_RETENTION_S = 7 * 86_400;
const WATCH_SK = 'WATCH';
const WATCH_PK = 'WFDUE';
const watchGsiSk = (dueAt: number, orgId: string, workflowId: string) =>
  `${String(dueAt).padStart(15, '0')}#${orgId}#${workflowId}`;

/** A claimed due time: the claim's token, and the sequence of the run once the claimer allots it. */
export interface SlotClaim {
  scheduledFor: string;
  runId: string;
  claimedAt: string;
  sequence?: number;
  boundAt?: string;
}

/** What the missed-runs sweep watches for an active scheduled workflow (see WATCH above). */
export interface ScheduleWatch {
  orgId: string;
  workflowId: string;
  expression: string;
  timezone: string;
  /** Rates: the grid's first due time (cron: when the watch was armed). */
  anchorAt: number;
  /** The next due time to check (a schedule with no future due time has no watch). */
  dueAt: number;
  /** Due times found missed so far (the sweep adds to it). */
  missed: number;
  lastMissedAt: string | null;
  armedAt: string;
}

const asWatch = (i: Item): ScheduleWatch => {
  const { type: _t, ...w } = strip(i) as unknown as ScheduleWatch & { type?: string };
  return w;
};

const asWorkflow = (i: Item) => strip(i) as unknown as WorkflowRecord & { type?: string };

export const workflowStore = {
  async get(orgId: string, id: string): Promise<WorkflowRecord | undefined> {
    const item = await db.get(orgPk(orgId), wfSk(id));
    if (!item) return undefined;
    const { type: _t, ...w } = asWorkflow(item);
    return w;
  },

  /** Every workflow of the organization (one Query on its partition's `WF#` range). */
  async list(orgId: string): Promise<WorkflowRecord[]> {
    const items = await db.query({ pk: orgPk(orgId), prefix: 'WF#' });
    return items.map((i) => {
      const { type: _t, ...w } = asWorkflow(i);
      return w;
    });
  },

  async create(w: WorkflowRecord): Promise<void> {
    await db.put({ pk: orgPk(w.orgId), sk: wfSk(w.id), type: 'workflow', ...w }, { ifAbsent: true });
  },

  /**
   * Replaces the draft in one conditional write: only when `draftRevision` still equals `expected`
   * (and the workflow is not being deleted). Undefined when the condition failed.
   */
  async replaceDraft(
    orgId: string,
    id: string,
    expected: number,
    next: Pick<WorkflowRecord, 'draft' | 'draftHash' | 'connectionIds' | 'draftCredentialIds' | 'updatedAt'>,
  ): Promise<WorkflowRecord | undefined> {
    const item = await db.patch(
      orgPk(orgId),
      wfSk(id),
      { ...next, draftRevision: expected + 1 },
      {
        condition: '#rev = :expected AND attribute_not_exists(deleting)',
        names: { '#rev': 'draftRevision' },
        values: { ':expected': expected },
      },
    );
    if (!item) return undefined;
    const { type: _t, ...w } = asWorkflow(item);
    return w;
  },

  /**
   * Stores a published version once: the key is the draft revision, whose content is fixed, so an
   * existing item (a reactivation, or a publish that was cut off before its commit) is kept as it is.
   * False only when that item carries another version number (a concurrent publish: retry).
   */
  async putVersion(orgId: string, v: PublishedVersion): Promise<boolean> {
    const item = {
      pk: wfPk(orgId, v.workflowId),
      sk: pubSk(v.draftRevision),
      type: 'workflow-version',
      ...v,
    };
    if (await db.put(item, { ifAbsent: true })) return true;
    const existing = await db.get(item.pk, item.sk);
    return existing?.version === v.version;
  },

  async getVersion(orgId: string, workflowId: string, draftRevision: number) {
    const item = await db.get(wfPk(orgId, workflowId), pubSk(draftRevision));
    if (!item) return undefined;
    const { type: _t, ...v } = strip(item) as unknown as PublishedVersion & { type?: string };
    return v;
  },

  /**
   * Commits a publication (or a reactivation of the same version) in one conditional write: only if the
   * draft is still at `draftRevision` and the published version is still what was read.
   */
  async commitPublish(
    orgId: string,
    id: string,
    expect: { draftRevision: number; publishedVersion: number | null },
    set: Pick<
      WorkflowRecord,
      | 'publishedVersion'
      | 'publishedDraftRevision'
      | 'publishedAt'
      | 'publishedHash'
      | 'publishedBy'
      | 'publishedCredentialIds'
      | 'updatedAt'
    >,
  ): Promise<WorkflowRecord | undefined> {
    const item = await db.patch(
      orgPk(orgId),
      wfSk(id),
      { ...set, isActive: true },
      {
        condition:
          '#rev = :rev AND attribute_not_exists(deleting) AND ' +
          (expect.publishedVersion === null
            ? '(attribute_not_exists(publishedVersion) OR publishedVersion = :null)'
            : 'publishedVersion = :pv'),
        names: { '#rev': 'draftRevision' },
        values:
          expect.publishedVersion === null
            ? { ':rev': expect.draftRevision, ':null': null }
            : { ':rev': expect.draftRevision, ':pv': expect.publishedVersion },
      },
    );
    if (!item) return undefined;
    const { type: _t, ...w } = asWorkflow(item);
    return w;
  },

  async deactivate(orgId: string, id: string, updatedAt: string): Promise<WorkflowRecord | undefined> {
    const item = await db.patch(
      orgPk(orgId),
      wfSk(id),
      { isActive: false, updatedAt },
      { condition: 'attribute_not_exists(deleting)' },
    );
    if (!item) return undefined;
    const { type: _t, ...w } = asWorkflow(item);
    return w;
  },

  /** First step of a DELETE: hides the workflow from every reader (idempotent). */
  async markDeleting(orgId: string, id: string): Promise<boolean> {
    const item = await db.patch(orgPk(orgId), wfSk(id), { deleting: true, isActive: false });
    return !!item;
  },

  /** Removes every item of the workflow's partition (versions, runs, attempts, slots, counter), then the workflow. */
  async purge(orgId: string, id: string): Promise<void> {
    const pk = wfPk(orgId, id);
    for (;;) {
      const items = await db.query({ pk, limit: 200 });
      if (!items.length) break;
      await Promise.all(items.map((i) => db.delete(i.pk, i.sk)));
    }
    await db.delete(orgPk(orgId), wfSk(id));
  },

  /**
   * Workflows of the organization whose draft, or whose active published version, references the
   * credential: one Query over the organization's workflows with a filter.
   */
  async referencingCredential(orgId: string, credentialId: string): Promise<string[]> {
    const items = await db.query({
      pk: orgPk(orgId),
      prefix: 'WF#',
      filter:
        'attribute_not_exists(deleting) AND (contains(draftCredentialIds, :c) OR (isActive = :t AND contains(publishedCredentialIds, :c)))',
      values: { ':c': credentialId, ':t': true },
    });
    return items.map((i) => String(i.id));
  },
};

export const runStore = {
  /**
   * Claims a scheduled due time with one conditional write: true for the first delivery of
   * (workflowId, scheduledFor), false for every repeat.
   */
  async claimSlot(orgId: string, workflowId: string, scheduledFor: string, runId: string): Promise<boolean> {
    return db.put(
      {
        pk: wfPk(orgId, workflowId),
        sk: slotSk(scheduledFor),
        type: 'workflow-slot',
        runId,
        claimedAt: new Date().toISOString(),
        ttl: Math.floor(Date.now() / 1000) + SLOT_RETENTION_S,
      },
      { ifAbsent: true },
    );
  },

  /**
   * Records on a claim the sequence of the run it starts (one conditional write): only while the claim is
   * still this claimer's (`token`) and has none yet. False when a sweep took the claim over meanwhile.
   */
  async bindSlot(
    orgId: string,
    workflowId: string,
    scheduledFor: string,
    token: string,
    sequence: number,
  ): Promise<boolean> {
    const item = await db.patch(
      wfPk(orgId, workflowId),
      slotSk(scheduledFor),
      { sequence, boundAt: new Date().toISOString() },
      {
        condition: 'runId = :token AND attribute_not_exists(#seq)',
        names: { '#seq': 'sequence' },
        values: { ':token': token },
      },
    );
    return !!item;
  },

  /**
   * Takes over a claim whose claimer stopped before recording its run (one conditional write on the
   * token seen): the claim's sequence, if it has one, is kept so that the run keeps its number.
   */
  async takeOverSlot(
    orgId: string,
    workflowId: string,
    scheduledFor: string,
    seenToken: string,
    token: string,
  ): Promise<boolean> {
    const item = await db.patch(
      wfPk(orgId, workflowId),
      slotSk(scheduledFor),
      { runId: token, claimedAt: new Date().toISOString(), takenOverFrom: seenToken },
      { condition: 'runId = :seen', values: { ':seen': seenToken } },
    );
    return !!item;
  },

  async getSlot(orgId: string, workflowId: string, scheduledFor: string): Promise<SlotClaim | undefined> {
    const item = await db.get(wfPk(orgId, workflowId), slotSk(scheduledFor));
    return item ? slotOf(item) : undefined;
  },

  /** The claims of due times `from`…`to` (ISO minutes, inclusive): one Query. */
  async slots(orgId: string, workflowId: string, from: string, to: string): Promise<Map<string, SlotClaim>> {
    const items = await db.query({ pk: wfPk(orgId, workflowId), between: [slotSk(from), slotSk(to)] });
    return new Map(items.map((i) => [String(i.sk).slice('SLOT#'.length), slotOf(i)]));
  },

  nextSequence(orgId: string, workflowId: string): Promise<number> {
    return db.increment(wfPk(orgId, workflowId), RUNSEQ, 'seq');
  },

  async total(orgId: string, workflowId: string): Promise<number> {
    const c = await db.get<{ seq?: number }>(wfPk(orgId, workflowId), RUNSEQ);
    return Number(c?.seq ?? 0);
  },

  /** Stores a new run; false when its sequence is taken already (two claimers of one due time). */
  async start(r: RunRecord): Promise<boolean> {
    return db.put(
      {
        pk: wfPk(r.orgId, r.workflowId),
        sk: runSk(r.sequence),
        type: 'workflow-run',
        gsi1pk: RUNNING_PK,
        gsi1sk: runningSk(r),
        ...r,
      },
      { ifAbsent: true },
    );
  },

  /** Ends a RUNNING run (one conditional write; false when it already ended, e.g. swept). */
  async finish(
    r: Pick<RunRecord, 'orgId' | 'workflowId' | 'sequence'>,
    end: Pick<RunRecord, 'status' | 'stepResults' | 'actionResults' | 'durationMs' | 'error' | 'completedAt'>,
  ): Promise<RunRecord | undefined> {
    const item = await db.patch(
      wfPk(r.orgId, r.workflowId),
      runSk(r.sequence),
      { ...end, gsi1pk: undefined, gsi1sk: undefined },
      { condition: '#s = :running', names: { '#s': 'status' }, values: { ':running': 'RUNNING' } },
    );
    return item ? (stripRun(item) as unknown as RunRecord) : undefined;
  },

  async get(orgId: string, workflowId: string, sequence: number): Promise<RunRecord | undefined> {
    const item = await db.get(wfPk(orgId, workflowId), runSk(sequence));
    return item ? (stripRun(item) as unknown as RunRecord) : undefined;
  },

  async putAttempt(orgId: string, workflowId: string, sequence: number, a: Record<string, unknown>) {
    await db.put({
      pk: wfPk(orgId, workflowId),
      sk: attemptSk(sequence, Number(a.actionOrder), Number(a.attempt)),
      type: 'workflow-attempt',
      ...a,
    });
  },

  /** Runs `lo`…`hi` with their attempts, newest first: one Query. */
  async page(orgId: string, workflowId: string, lo: number, hi: number): Promise<Item[]> {
    return db.query({
      pk: wfPk(orgId, workflowId),
      between: [runSk(lo), `${runSk(hi)}#~`],
      newestFirst: true,
    });
  },

  /** Hands a started run to the runner worker: what it runs and with whose rights (see manual-runs.ts). */
  async putJob(r: Pick<RunRecord, 'orgId' | 'workflowId' | 'sequence' | 'id'>, job: Record<string, unknown>) {
    await db.put({
      pk: wfPk(r.orgId, r.workflowId),
      sk: jobSk(r.sequence),
      type: 'workflow-job',
      runId: r.id,
      ...job,
      ttl: Math.floor(Date.now() / 1000) + JOB_RETENTION_S,
    });
  },

  /** Claims a run's job with one conditional write: the job on the first claim, undefined on every later one. */
  async claimJob(orgId: string, workflowId: string, sequence: number): Promise<Item | undefined> {
    return db.patch(
      wfPk(orgId, workflowId),
      jobSk(sequence),
      { claimedAt: new Date().toISOString() },
      { condition: 'attribute_exists(pk) AND attribute_not_exists(claimedAt)' },
    );
  },

  async deleteJob(orgId: string, workflowId: string, sequence: number): Promise<void> {
    await db.delete(wfPk(orgId, workflowId), jobSk(sequence));
  },

  /**
   * Puts every attempt of the run still RUNNING in a final state (FAILED, completed now): a run that ends
   * (at its deadline, or closed by the sweep) leaves no attempt looking as if it were still under way.
   */
  async closeAttempts(orgId: string, workflowId: string, sequence: number, error: string): Promise<number> {
    const items = await db.query({ pk: wfPk(orgId, workflowId), prefix: `${runSk(sequence)}#A#` });
    let closed = 0;
    for (const a of items) {
      if (a.status !== 'RUNNING') continue;
      const done = await db.patch(
        String(a.pk),
        String(a.sk),
        {
          status: 'FAILED',
          error,
          completedAt: new Date().toISOString(),
          durationMs: Math.max(0, Date.now() - Date.parse(String(a.startedAt))),
        },
        { condition: '#s = :running', names: { '#s': 'status' }, values: { ':running': 'RUNNING' } },
      );
      if (done) closed++;
    }
    return closed;
  },

  /** Runs still RUNNING whose deadline is at or before `before` (all organizations; the sweep's index). */
  async overdue(before: number, limit = 100): Promise<Item[]> {
    return db.query({
      pk: RUNNING_PK,
      index: 'gsi1',
      between: ['0', `${String(before).padStart(15, '0')}#~`],
      limit,
    });
  },
};

const slotOf = (i: Item): SlotClaim => ({
  scheduledFor: String(i.sk).slice('SLOT#'.length),
  runId: String(i.runId),
  claimedAt: String(i.claimedAt),
  ...(typeof i.sequence === 'number' ? { sequence: i.sequence } : {}),
  ...(typeof i.boundAt === 'string' ? { boundAt: i.boundAt } : {}),
});

/**
 * Schedule watches (one small item per active scheduled workflow, beside its runs). Every change is one
 * conditional single-item write: arming compares the `dueAt` it read, the sweep advances `dueAt` only
 * from the value it read, so two sweeps never count a due time twice and a publish never undoes a sweep.
 */
export const watchStore = {
  async get(orgId: string, workflowId: string): Promise<ScheduleWatch | undefined> {
    const item = await db.get(wfPk(orgId, workflowId), WATCH_SK);
    return item ? asWatch(item) : undefined;
  },

  /**
   * Writes a watch: when `seenDueAt` is undefined only if there is none, otherwise only if the stored one
   * still has that `dueAt`. False when the condition failed (read again and retry).
   */
  async put(w: ScheduleWatch, seenDueAt?: number): Promise<boolean> {
    const item: Item = {
      pk: wfPk(w.orgId, w.workflowId),
      sk: WATCH_SK,
      type: 'workflow-watch',
      gsi1pk: WATCH_PK,
      gsi1sk: watchGsiSk(w.dueAt, w.orgId, w.workflowId),
      ...w,
    };
    if (seenDueAt === undefined) return db.put(item, { ifAbsent: true });
    return db.put(item, { condition: 'dueAt = :seen', values: { ':seen': seenDueAt } });
  },

  /**
   * Moves the watch from the due time it was read at (`seenDueAt`) to `nextDueAt`, adding `missed` to its
   * count; one conditional write. False when another sweep or a publish changed it first. A schedule
   * with no due time left loses its watch (conditionally too).
   */
  async advance(
    w: Pick<ScheduleWatch, 'orgId' | 'workflowId'>,
    seenDueAt: number,
    nextDueAt: number | null,
    missed: number,
  ): Promise<boolean> {
    if (nextDueAt === null) return watchStore.remove(w.orgId, w.workflowId, seenDueAt);
    const values: Record<string, unknown> = {
      ':seen': seenDueAt,
      ':next': nextDueAt,
      ':g': watchGsiSk(nextDueAt, w.orgId, w.workflowId),
      ':n': missed,
    };
    let update = 'SET dueAt = :next, gsi1sk = :g ADD missed :n';
    if (missed > 0) {
      update = 'SET dueAt = :next, gsi1sk = :g, lastMissedAt = :at ADD missed :n';
      values[':at'] = new Date().toISOString();
    }
    const done = await db.update({
      pk: wfPk(w.orgId, w.workflowId),
      sk: WATCH_SK,
      update,
      condition: 'dueAt = :seen',
      values,
    });
    return !!done;
  },

  /** Removes the watch; with `seenDueAt`, only if it still has that due time (false otherwise). */
  async remove(orgId: string, workflowId: string, seenDueAt?: number): Promise<boolean> {
    if (seenDueAt === undefined) return db.delete(wfPk(orgId, workflowId), WATCH_SK);
    return db.delete(wfPk(orgId, workflowId), WATCH_SK, {
      condition: 'dueAt = :seen',
      values: { ':seen': seenDueAt },
    });
  },

  /**
   * Watches whose due time is at or before `before` (all organizations, earliest first), after the watch
   * `after` when given (the next page): one Query.
   */
  async due(before: number, limit = 100, after?: ScheduleWatch): Promise<ScheduleWatch[]> {
    // No index key is another one followed by a character below a space: the next page starts there.
    const from = after ? `${watchGsiSk(after.dueAt, after.orgId, after.workflowId)} ` : '0';
    const items = await db.query({
      pk: WATCH_PK,
      index: 'gsi1',
      between: [from, `${String(before).padStart(15, '0')}#~`],
      limit,
    });
    return items.map(asWatch);
  },
};

export function stripRun(item: Item): Record<string, unknown> {
  const { type: _t, ...rest } = strip(item);
  return rest;
}
