import { type Cadence, nextDue, rateOf, rateStartAt } from './due-times';
import { type ScheduleConfig, scheduleExpressionOf } from './schedule';
import { type ScheduleWatch, type WorkflowRecord, watchStore } from './store';

/**
 * The schedule watch of an active scheduled workflow (store.ts, `WATCH`): what the missed-runs sweep
 * (missed-runs.ts) checks its runs against. Armed when the workflow's schedule is created or changed,
 * removed with the schedule.
 */

export const cadenceOf = (w: Pick<ScheduleWatch, 'expression' | 'timezone' | 'anchorAt'>): Cadence => ({
  expression: w.expression,
  timezone: w.timezone,
  anchorAt: w.anchorAt,
});

/**
 * Arms the watch for `cfg`, or keeps the stored one when its expression and time zone are the same (its
 * rate grid and its progress stay). A new watch's first due time: for a rate, the grid's start (`ranAt`,
 * the due time of a run that is under way, when the runner arms it; else rateStartAt(now)); for a cron,
 * the first due time after `ranAt` or `now`. With `onlyIfAbsent` a stored watch is never replaced (the
 * runner arming the watch of a workflow published before watches existed). Every write is conditional on
 * what was read; a concurrent change makes it read again. Undefined when the schedule is never due again.
 */
export async function armWatch(
  w: Pick<WorkflowRecord, 'orgId' | 'id'>,
  cfg: ScheduleConfig,
  now: number,
  opts: { ranAt?: number; onlyIfAbsent?: boolean } = {},
): Promise<ScheduleWatch | undefined> {
  const { expression, timezone } = scheduleExpressionOf(cfg);
  const every = rateOf(expression);
  for (let attempt = 0; attempt < 5; attempt++) {
    const existing = await watchStore.get(w.orgId, w.id);
    if (
      existing &&
      (opts.onlyIfAbsent || (existing.expression === expression && existing.timezone === timezone))
    )
      return existing;
    const anchorAt = every === null ? now : (opts.ranAt ?? rateStartAt(now));
    const c: Cadence = { expression, timezone, anchorAt };
    const dueAt =
      every === null ? nextDue(c, opts.ranAt ?? now) : opts.ranAt === undefined ? anchorAt : anchorAt + every;
    if (dueAt === null) {
      // A cron with no due time left (its years are over): nothing to watch.
      if (!existing || (await watchStore.remove(w.orgId, w.id, existing.dueAt))) return undefined;
      continue;
    }
    const watch: ScheduleWatch = {
      orgId: w.orgId,
      workflowId: w.id,
      ...c,
      dueAt,
      missed: existing?.missed ?? 0,
      lastMissedAt: existing?.lastMissedAt ?? null,
      armedAt: new Date(now).toISOString(),
    };
    if (await watchStore.put(watch, existing?.dueAt)) return watch;
  }
  throw new Error(`The schedule watch of workflow ${w.id} kept changing while it was being armed.`);
}
