import { validationError } from '../errors';
import { assertTimeZone, parseScheduleExpression, type ScheduleExpression } from './expression';
import type { ScheduleSpec } from './port';

/** Prefix of the schedules the runtime keeps for the fixed schedules of the worker manifest. */
export const SYSTEM_PREFIX = 'system.';

export interface CheckedSpec {
  expr: ScheduleExpression;
  timezone: string;
  /** The payload as JSON text (EventBridge Scheduler's target Input). */
  input: string;
  /** Rate expressions only: the first occurrence (epoch ms), when the spec gives one. */
  startAt?: number;
}

/** Validates a schedule the way EventBridge Scheduler would, with 400 VALIDATION_ERROR on a problem. */
export function checkSpec(spec: ScheduleSpec): CheckedSpec {
  if (typeof spec.name !== 'string' || !/^[0-9A-Za-z_.-]{1,64}$/.test(spec.name))
    throw validationError('A schedule name is 1 to 64 letters, digits, ".", "-" or "_".', {
      name: spec.name,
    });
  if (typeof spec.worker !== 'string' || !spec.worker)
    throw validationError('A schedule needs the name of the worker it invokes.');
  const expr = parseScheduleExpression(spec.expression);
  const timezone = spec.timezone ?? 'UTC';
  assertTimeZone(timezone);
  const input = JSON.stringify(spec.payload ?? {});
  if (input === undefined) throw validationError('A schedule payload must be JSON-serializable.');
  if (spec.startAt === undefined || expr.kind !== 'rate') return { expr, timezone, input };
  const startAt = spec.startAt instanceof Date ? spec.startAt.getTime() : Number.NaN;
  if (!Number.isFinite(startAt)) throw validationError('A schedule startAt must be a valid date.');
  return { expr, timezone, input, startAt };
}
