import { EventEmitter } from 'node:events';
import { config } from '../config';
import { documentClient } from '../db/client';
import { db, isConditionFailure } from '../db/store';
import { LocalQueue } from '../queue/local';
import { workers as manifest, type WorkerDef } from '../workers';
import { firstFireTime, nextFireTime, parseScheduleExpression, type ScheduleExpression } from './expression';
import type { Scheduler, ScheduleSpec } from './port';
import { checkSpec, SYSTEM_PREFIX } from './spec';

/** The local runtime's internal queue of due schedule invocations (retried like Lambda async invokes). */
export const SCHEDULED_QUEUE = '@scheduled';

/** One due schedule invocation, as queued for the local runtime. */
export interface ScheduledInvocation {
  schedule: string;
  worker: string;
  /** The payload JSON, before context attributes are filled in. */
  input: string;
  /** When it was due, as EventBridge Scheduler writes it (2026-01-01T09:00:00Z). */
  scheduledTime: string;
}

export type StoredSchedule = {
  name: string;
  expression: string;
  timezone: string;
  worker: string;
  input: string;
  /** Start of the rate grid (creation, or the last change of expression or time zone). */
  anchorAt: number;
  /** Next due time; absent when the expression has no future time. */
  nextFireAt?: number;
  lastFiredAt?: number;
  createdAt: number;
  updatedAt: number;
};

type ScheduleItem = StoredSchedule & { pk: string; sk: string; gsi1pk?: string; gsi1sk?: string };

const PK = 'SCHEDULES';
const DUE_PK = 'SCHEDULESDUE';
const sk = (name: string) => `SCHEDULE#${name}`;
const pad = (ms: number) => String(Math.max(0, Math.floor(ms))).padStart(15, '0');
const dueKeys = (next: number | undefined, name: string) =>
  next === undefined ? {} : { gsi1pk: DUE_PK, gsi1sk: `${pad(next)}#${name}` };
const toScheduledTime = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

/** In-process signal: schedules changed (lets the local runtime look for due ones at once). */
export const localSchedulerSignals = new EventEmitter();
localSchedulerSignals.setMaxListeners(0);

/**
 * Fills in EventBridge Scheduler's context attributes in a payload, as the service does when it
 * invokes the target: `<aws.scheduler.scheduled-time>`, `<aws.scheduler.schedule-arn>`,
 * `<aws.scheduler.execution-id>`, `<aws.scheduler.attempt-number>`.
 */
export function renderInput(inv: ScheduledInvocation, executionId: string, attempt: number): string {
  return inv.input
    .replaceAll('<aws.scheduler.scheduled-time>', inv.scheduledTime)
    .replaceAll(
      '<aws.scheduler.schedule-arn>',
      `arn:aws:scheduler:local:000000000000:schedule/local/${inv.schedule}`,
    )
    .replaceAll('<aws.scheduler.execution-id>', executionId)
    .replaceAll('<aws.scheduler.attempt-number>', String(attempt));
}

/**
 * Schedules kept in the main table (they survive restarts), found through gsi1 by their next due
 * time. `fireDue()` (called by the local runtime's timer) claims each due schedule with one
 * conditional write that moves its next time past now, so a schedule that became due several times
 * while the process was down fires once, and two timers never both fire it; then it queues the
 * invocation. An at() schedule is deleted when it fires.
 */
export class LocalScheduler implements Scheduler {
  private readonly workers: WorkerDef[];
  private readonly now: () => number;
  private readonly queue: LocalQueue;

  constructor(opts: { workers?: WorkerDef[]; now?: () => number; queue?: LocalQueue } = {}) {
    this.workers = opts.workers ?? manifest;
    this.now = opts.now ?? Date.now;
    this.queue = opts.queue ?? new LocalQueue({ workers: this.workers, now: this.now });
  }

  async upsert(spec: ScheduleSpec): Promise<void> {
    const { expr, timezone, input, startAt } = checkSpec(spec);
    if (!this.workers.some((w) => w.name === spec.worker))
      throw new Error(`No worker named "${spec.worker}" in the worker manifest.`);
    for (let attempt = 0; attempt < 10; attempt++) {
      const now = this.now();
      const existing = await db.get<ScheduleItem>(PK, sk(spec.name));
      // A rate given a start keeps its stored grid when the start lies on it (EventBridge's StartDate).
      const sameGrid =
        startAt === undefined ||
        (expr.kind === 'rate' && (startAt - (existing?.anchorAt ?? 0)) % expr.everyMs === 0);
      const sameTiming =
        existing && existing.expression === expr.text && existing.timezone === timezone && sameGrid;
      const anchorAt = sameTiming ? existing.anchorAt : (startAt ?? now);
      const nextFireAt = sameTiming
        ? existing.nextFireAt
        : (startAt ?? firstFireTime(expr, new Date(now), timezone)?.getTime() ?? undefined);
      const item: ScheduleItem = {
        pk: PK,
        sk: sk(spec.name),
        ...dueKeys(nextFireAt, spec.name),
        name: spec.name,
        expression: expr.text,
        timezone,
        worker: spec.worker,
        input,
        anchorAt,
        nextFireAt,
        lastFiredAt: existing?.lastFiredAt,
        createdAt: existing?.createdAt ?? now,
        updatedAt: now,
      };
      // Conditional on what was read, so a concurrent fire (which moves nextFireAt) is not undone.
      const written = existing
        ? await db.put(item, {
            condition:
              existing.nextFireAt === undefined ? 'attribute_not_exists(nextFireAt)' : 'nextFireAt = :seen',
            values: existing.nextFireAt === undefined ? undefined : { ':seen': existing.nextFireAt },
          })
        : await db.put(item, { ifAbsent: true });
      if (written) {
        localSchedulerSignals.emit('changed');
        return;
      }
    }
    throw new Error(`Schedule "${spec.name}" kept changing while it was being saved; try again.`);
  }

  async remove(name: string): Promise<void> {
    await db.delete(PK, sk(name));
  }

  async get(name: string): Promise<StoredSchedule | undefined> {
    const item = await db.get<ScheduleItem>(PK, sk(name));
    return item ? plain(item) : undefined;
  }

  async list(prefix = ''): Promise<StoredSchedule[]> {
    const items = await db.query<ScheduleItem>({ pk: PK, prefix: sk(prefix) });
    return items.map(plain);
  }

  /** The earliest next due time of any schedule. */
  async nextDueAt(): Promise<number | undefined> {
    const [first] = await db.query<ScheduleItem>({ pk: DUE_PK, index: 'gsi1', limit: 1 });
    return first?.nextFireAt;
  }

  /**
   * Keeps one schedule per fixed schedule of the manifest (`system.<worker>`), and removes those of
   * workers that no longer have one. An unchanged expression keeps its next due time across restarts.
   */
  async syncSystemSchedules(): Promise<void> {
    const wanted = this.workers.filter((w) => w.schedule);
    for (const w of wanted)
      await this.upsert({
        name: `${SYSTEM_PREFIX}${w.name}`,
        expression: w.schedule!.expression,
        worker: w.name,
        payload: w.schedule!.payload ?? {},
      });
    const names = new Set(wanted.map((w) => `${SYSTEM_PREFIX}${w.name}`));
    for (const s of await this.list(SYSTEM_PREFIX)) if (!names.has(s.name)) await this.remove(s.name);
  }

  /** Fires every schedule due now (once each, whatever was missed) into the scheduled queue. */
  async fireDue(max = 100): Promise<ScheduledInvocation[]> {
    return (await this.fireDueAndLook(max)).fired;
  }

  /**
   * fireDue, and the next due time of a schedule that is not due yet, when the same query saw one: the
   * local runtime sleeps until then instead of polling (infra/local/workers.ts).
   */
  async fireDueAndLook(max = 100): Promise<{ fired: ScheduledInvocation[]; nextDueAt?: number }> {
    const now = this.now();
    // In due order: the due schedules first, then the first one that is not due yet.
    const due = await db.query<ScheduleItem>({ pk: DUE_PK, index: 'gsi1', limit: max + 1 });
    const nextDueAt = due.find((s) => s.nextFireAt !== undefined && s.nextFireAt > now)?.nextFireAt;
    const fired: ScheduledInvocation[] = [];
    for (const s of due) {
      if (s.nextFireAt === undefined || s.nextFireAt > now) continue;
      const dueAt = await this.claim(s as ScheduleItem & { nextFireAt: number }, now);
      if (dueAt === undefined) continue;
      const inv: ScheduledInvocation = {
        schedule: s.name,
        worker: s.worker,
        input: s.input,
        scheduledTime: toScheduledTime(dueAt),
      };
      await this.queue.enqueue(SCHEDULED_QUEUE, inv);
      fired.push(inv);
    }
    return { fired, nextDueAt };
  }

  /**
   * Moves a due schedule's next time past now with one conditional write; returns the latest time it
   * was due (the one this single catch-up run stands for), or undefined when another timer claimed it.
   */
  private async claim(s: ScheduleItem & { nextFireAt: number }, now: number): Promise<number | undefined> {
    const expr = parseScheduleExpression(s.expression);
    if (expr.kind === 'at') {
      try {
        await documentClient().send('DeleteItem', {
          TableName: config().LOUPE_TABLE_NAME,
          Key: { pk: s.pk, sk: s.sk },
          ConditionExpression: 'nextFireAt = :seen',
          ExpressionAttributeValues: { ':seen': s.nextFireAt },
        });
        return s.nextFireAt;
      } catch (e) {
        if (isConditionFailure(e)) return undefined;
        throw e;
      }
    }
    const { latest, next } = latestDue(expr, s, now);
    const claimed =
      next === undefined
        ? await db.update({
            pk: s.pk,
            sk: s.sk,
            update: 'SET lastFiredAt = :now REMOVE nextFireAt, gsi1pk, gsi1sk',
            condition: 'nextFireAt = :seen',
            values: { ':now': now, ':seen': s.nextFireAt },
          })
        : await db.update({
            pk: s.pk,
            sk: s.sk,
            update: 'SET lastFiredAt = :now, nextFireAt = :next, gsi1sk = :g',
            condition: 'nextFireAt = :seen',
            values: { ':now': now, ':next': next, ':g': dueKeys(next, s.name).gsi1sk, ':seen': s.nextFireAt },
          });
    return claimed === undefined ? undefined : latest;
  }
}

/** The latest due time at or before `now` (from the stored next time on) and the first one after it. */
function latestDue(
  expr: ScheduleExpression,
  s: { nextFireAt: number; timezone: string; anchorAt: number },
  now: number,
): { latest: number; next: number | undefined } {
  const opts = { timezone: s.timezone, anchor: new Date(s.anchorAt) };
  if (expr.kind === 'rate') {
    const latest = s.anchorAt + Math.floor((now - s.anchorAt) / expr.everyMs) * expr.everyMs;
    return { latest: Math.max(latest, s.nextFireAt), next: latest + expr.everyMs };
  }
  let latest = s.nextFireAt;
  for (let i = 0; i < 10_000; i++) {
    const next = nextFireTime(expr, new Date(latest), opts)?.getTime();
    if (next === undefined || next > now) return { latest, next };
    latest = next;
  }
  return { latest, next: nextFireTime(expr, new Date(now), opts)?.getTime() };
}

function plain(item: ScheduleItem): StoredSchedule {
  const { pk: _pk, sk: _sk, gsi1pk: _g1, gsi1sk: _g2, ...rest } = item;
  return rest;
}
