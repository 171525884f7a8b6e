import * as z from 'zod/mini';
import { describe } from '../http/schemas';
import { validationError } from '../platform/errors';
import { assertTimeZone } from '../platform/scheduler/expression';

/**
 * ScheduleConfig (interface.md), discriminated by `preset`, plus the `timezone` extension (an IANA
 * name, default UTC; decisions §8).
 */
const Minute = z.number().check(z.int(), z.gte(0), z.lte(59));
const Hour = z.number().check(z.int(), z.gte(0), z.lte(23));
const TimeZone = z.optional(z.string().check(z.minLength(1), z.maxLength(64)));

export const ScheduleConfig = z.discriminatedUnion('preset', [
  z.object({
    preset: z.literal('EVERY_N_MINUTES'),
    minutes: z.number().check(z.int(), z.gte(5), z.lte(43_200)),
    timezone: TimeZone,
  }),
  z.object({ preset: z.literal('HOURLY'), timezone: TimeZone }),
  z.object({ preset: z.literal('DAILY'), hour: Hour, minute: z._default(Minute, 0), timezone: TimeZone }),
  z.object({
    preset: z.literal('WEEKLY'),
    dayOfWeek: describe(z.number().check(z.int(), z.gte(0), z.lte(6)), '0 = Sunday … 6 = Saturday'),
    hour: Hour,
    minute: z._default(Minute, 0),
    timezone: TimeZone,
  }),
]);
export type ScheduleConfig = z.output<typeof ScheduleConfig>;

/** EventBridge cron counts day-of-week 1 = SUN … 7 = SAT; names avoid any off-by-one doubt. */
const WEEKDAY_NAMES = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'] as const;

/**
 * Parses a ScheduleConfig given as an object or a JSON-encoded string; 400 VALIDATION_ERROR naming
 * `${path}.<field>` otherwise. The time zone is checked against the runtime's IANA data.
 */
export function parseScheduleConfig(raw: unknown, path: string): ScheduleConfig {
  let value = raw;
  if (typeof raw === 'string') {
    try {
      value = JSON.parse(raw);
    } catch {
      throw validationError('triggerConfig is not valid JSON.', {
        issues: [{ path, message: 'not valid JSON', code: 'invalid_json' }],
      });
    }
  }
  const r = ScheduleConfig.safeParse(value);
  if (!r.success)
    throw validationError('Invalid schedule configuration.', {
      issues: r.error.issues.map((i) => ({
        path: [path, ...i.path.map(String)].join('.'),
        message: i.message,
        code: i.code,
      })),
    });
  const cfg = r.data;
  if (cfg.timezone !== undefined) {
    try {
      assertTimeZone(cfg.timezone);
    } catch {
      throw validationError(`Unknown time zone "${cfg.timezone}"; use an IANA name such as Europe/Paris.`, {
        issues: [{ path: `${path}.timezone`, message: 'not an IANA time zone', code: 'invalid_value' }],
      });
    }
  }
  return cfg;
}

/** The EventBridge Scheduler expression and time zone of a preset (flexible window off). */
export function scheduleExpressionOf(cfg: ScheduleConfig): { expression: string; timezone: string } {
  const timezone = cfg.timezone ?? 'UTC';
  switch (cfg.preset) {
    case 'EVERY_N_MINUTES':
      return { expression: `rate(${cfg.minutes} minutes)`, timezone };
    case 'HOURLY':
      return { expression: 'cron(0 * * * ? *)', timezone };
    case 'DAILY':
      return { expression: `cron(${cfg.minute} ${cfg.hour} * * ? *)`, timezone };
    case 'WEEKLY':
      return {
        expression: `cron(${cfg.minute} ${cfg.hour} ? * ${WEEKDAY_NAMES[cfg.dayOfWeek]} *)`,
        timezone,
      };
  }
}

/** The schedule's name in the scheduler (group-scoped in AWS; 64 characters at most). */
export const scheduleNameOf = (workflowId: string) => `wf-${workflowId}`;

/** `scheduledFor`: the minute a scheduled run was due (EventBridge's scheduled-time, seconds dropped). */
export function scheduledMinute(scheduledTime: string | undefined, fallback: number): string {
  const t = scheduledTime ? Date.parse(scheduledTime) : Number.NaN;
  const ms = Number.isNaN(t) ? fallback : t;
  return new Date(Math.floor(ms / 60_000) * 60_000).toISOString();
}
