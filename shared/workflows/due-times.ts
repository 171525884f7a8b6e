import { nextFireTime, parseScheduleExpression } from '../platform/scheduler/expression';

/**
 * When a scheduled workflow is due, computed with the scheduler's own expression math
 * (shared/platform/scheduler/expression.ts: the zone's daylight-saving rules as EventBridge Scheduler
 * applies them: a cron time that does not exist on the spring-forward day is skipped, one that occurs
 * twice on the fall-back day is due once, at its first occurrence; a rate is a fixed duration).
 */
export interface Cadence {
  /** The schedule expression: `cron(…)` or `rate(…)`. */
  expression: string;
  /** IANA time zone of a cron (a rate ignores it). */
  timezone: string;
  /** Rates only: the first due time; the next ones follow every interval after it. */
  anchorAt: number;
}

const MINUTE = 60_000;

/** The interval of a rate expression in ms, or null for a cron. */
export function rateOf(expression: string): number | null {
  const expr = parseScheduleExpression(expression);
  return expr.kind === 'rate' ? expr.everyMs : null;
}

/** The first due time strictly after `t`, or null when the schedule has none. */
export function nextDue(c: Cadence, t: number): number | null {
  const next = nextFireTime(c.expression, new Date(t), {
    timezone: c.timezone,
    anchor: new Date(c.anchorAt),
  });
  return next ? next.getTime() : null;
}

/**
 * The due times from `first` (itself a due time) up to `until` inclusive, at most `max` of them, and
 * the first due time after those (null: none; or the one after the `max`th when the list was cut).
 */
export function dueTimesThrough(
  c: Cadence,
  first: number,
  until: number,
  max: number,
): { due: number[]; next: number | null } {
  const due: number[] = [];
  let t: number | null = first;
  while (t !== null && t <= until && due.length < max) {
    due.push(t);
    t = nextDue(c, t);
  }
  return { due, next: t };
}

/**
 * Where a new rate schedule's grid starts: the first whole minute at least 30 seconds after `now`, so the
 * scheduler receives the schedule while its start is still ahead, and every due time is a whole minute, the same in both runtimes and in `scheduledFor`.
 */
export function rateStartAt(now: number): number {
  return Math.ceil((now + 30_000) / MINUTE) * MINUTE;
}

/** The first point of a rate grid (`anchorAt` + k · `everyMs`, k ≥ 0) at or after `t`. */
export function gridPointAtOrAfter(anchorAt: number, everyMs: number, t: number): number {
  if (t <= anchorAt) return anchorAt;
  return anchorAt + Math.ceil((t - anchorAt) / everyMs) * everyMs;
}

/** `scheduledFor` of a due time: its minute, as ISO text (the key a run claims its due time with). */
export const dueMinute = (t: number): string => new Date(Math.floor(t / MINUTE) * MINUTE).toISOString();

/** How far back a missed run is still made up: EventBridge Scheduler's own retry window for an invocation. */
export const CATCH_UP_WINDOW_MS = 24 * 3_600_000;

/**
 * Which missed due time the sweep runs once: the latest of them, unless a later due time was claimed
 * already (its run, newer, supersedes the stale one) or it is more than CATCH_UP_WINDOW_MS old. Null
 * when none qualifies. `claimed` holds the due times (ms) runs were claimed for.
 */
export function catchUpTarget(missed: number[], claimed: number[], now: number): number | null {
  if (!missed.length) return null;
  const latest = Math.max(...missed);
  if (claimed.some((t) => t > latest)) return null;
  return now - latest <= CATCH_UP_WINDOW_MS ? latest : null;
}
