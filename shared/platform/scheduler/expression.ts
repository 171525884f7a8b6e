import { validationError } from '../errors';

/**
 * EventBridge Scheduler expressions: `rate(n minutes|hours|days)`,
 * `cron(minutes hours day-of-month month day-of-week year)` and `at(yyyy-mm-ddThh:mm:ss)`, evaluated
 * in an IANA time zone with the same daylight-saving rules as EventBridge Scheduler: a cron time that
 * does not exist (spring forward) is skipped, a time that occurs twice (fall back) fires once, and a
 * rate is a fixed duration (a day is 24 hours).
 */
export type ScheduleExpression =
  | { kind: 'rate'; text: string; everyMs: number }
  | { kind: 'cron'; text: string; cron: CronFields }
  | { kind: 'at'; text: string; wall: number };

export interface CronFields {
  minutes: number[];
  hours: number[];
  months: number[];
  years: number[];
  /** Day-of-month rule, or null when the field is `?`. */
  dom: DomRule | null;
  /** Day-of-week rule, or null when the field is `?`. */
  dow: DowRule | null;
}

type DomRule =
  | { kind: 'set'; days: Set<number> }
  | { kind: 'last' }
  | { kind: 'lastWeekday' }
  | { kind: 'nearestWeekday'; day: number };
/** Week days are 1 (Sunday) to 7 (Saturday), as in EventBridge. */
type DowRule =
  | { kind: 'set'; days: Set<number> }
  | { kind: 'lastOfMonth'; day: number }
  | { kind: 'nth'; day: number; nth: number };

const MINUTE = 60_000;
const DAY = 86_400_000;
const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const WEEKDAYS = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];
const UNITS: Record<string, number> = { minute: MINUTE, hour: 60 * MINUTE, day: DAY };

const invalid = (text: string, why: string) =>
  validationError(`Invalid schedule expression "${text}": ${why}.`, { expression: text });

/** Parses an expression, throwing 400 VALIDATION_ERROR that says what is wrong. */
export function parseScheduleExpression(input: string | ScheduleExpression): ScheduleExpression {
  if (typeof input !== 'string') return input;
  const text = input.trim();
  const m = /^(rate|cron|at)\((.*)\)$/s.exec(text);
  if (!m) throw invalid(input, 'expected rate(...), cron(...) or at(...)');
  const [, kind, inner] = m;
  if (kind === 'rate') return { kind, text, everyMs: parseRate(text, inner.trim()) };
  if (kind === 'at') return { kind, text, wall: parseAt(text, inner.trim()) };
  return { kind: 'cron', text, cron: parseCron(text, inner.trim()) };
}

function parseRate(text: string, inner: string): number {
  const m = /^(\d+)\s+(minute|minutes|hour|hours|day|days)$/.exec(inner);
  if (!m) throw invalid(text, 'a rate is "<value> minutes|hours|days"');
  const value = Number(m[1]);
  if (!Number.isSafeInteger(value) || value < 1)
    throw invalid(text, 'the rate value must be a positive integer');
  const plural = m[2].endsWith('s');
  if (value === 1 && plural)
    throw invalid(text, `use the singular unit with 1 (rate(1 ${m[2].slice(0, -1)}))`);
  if (value > 1 && !plural) throw invalid(text, `use the plural unit with ${value} (${m[2]}s)`);
  return value * UNITS[plural ? m[2].slice(0, -1) : m[2]];
}

function parseAt(text: string, inner: string): number {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})$/.exec(inner);
  if (!m) throw invalid(text, 'a one-time schedule is at(yyyy-mm-ddThh:mm:ss)');
  const [y, mo, d, h, mi, s] = m.slice(1).map(Number);
  const wall = Date.UTC(y, mo - 1, d, h, mi, s);
  const back = new Date(wall);
  if (
    back.getUTCFullYear() !== y ||
    back.getUTCMonth() !== mo - 1 ||
    back.getUTCDate() !== d ||
    h > 23 ||
    mi > 59 ||
    s > 59
  )
    throw invalid(text, 'not a valid date and time');
  return wall;
}

function parseCron(text: string, inner: string): CronFields {
  const parts = inner.split(/\s+/);
  if (parts.length !== 6)
    throw invalid(text, 'cron needs 6 fields: minutes hours day-of-month month day-of-week year');
  const [min, hour, dom, month, dow, year] = parts;
  if ((dom === '?') === (dow === '?'))
    throw invalid(text, 'exactly one of day-of-month and day-of-week must be "?"');
  const fields: CronFields = {
    minutes: parseList(text, 'minutes', min, 0, 59),
    hours: parseList(text, 'hours', hour, 0, 23),
    months: parseList(text, 'month', month, 1, 12, MONTHS),
    years: parseList(text, 'year', year, 1970, 2199),
    dom: dom === '?' ? null : parseDom(text, dom),
    dow: dow === '?' ? null : parseDow(text, dow),
  };
  return fields;
}

function parseDom(text: string, field: string): DomRule {
  if (field === 'L') return { kind: 'last' };
  if (field === 'LW') return { kind: 'lastWeekday' };
  const w = /^(\d{1,2})W$/.exec(field);
  if (w) {
    const day = Number(w[1]);
    if (day < 1 || day > 31) throw invalid(text, `day-of-month ${day} is outside 1-31`);
    return { kind: 'nearestWeekday', day };
  }
  if (/[LW]/.test(field)) throw invalid(text, 'L and W stand alone in day-of-month (L, LW or nW)');
  return { kind: 'set', days: new Set(parseList(text, 'day-of-month', field, 1, 31)) };
}

function parseDow(text: string, field: string): DowRule {
  if (field === 'L') return { kind: 'set', days: new Set([7]) };
  const last = /^([A-Z]{3}|\d)L$/i.exec(field);
  if (last) return { kind: 'lastOfMonth', day: parseValue(text, 'day-of-week', last[1], 1, 7, WEEKDAYS) };
  const nth = /^([A-Z]{3}|\d)#(\d)$/i.exec(field);
  if (nth) {
    const n = Number(nth[2]);
    if (n < 1 || n > 5) throw invalid(text, 'the # occurrence must be 1-5');
    return { kind: 'nth', day: parseValue(text, 'day-of-week', nth[1], 1, 7, WEEKDAYS), nth: n };
  }
  if (/[L#/]/.test(field)) throw invalid(text, 'day-of-week allows a list, a range, *, ?, L, nL or n#k');
  return { kind: 'set', days: new Set(parseList(text, 'day-of-week', field, 1, 7, WEEKDAYS)) };
}

function parseValue(
  text: string,
  name: string,
  raw: string,
  lo: number,
  hi: number,
  names?: string[],
): number {
  const upper = raw.toUpperCase();
  const named = names?.indexOf(upper) ?? -1;
  if (named >= 0) return named + lo;
  if (!/^\d+$/.test(raw)) throw invalid(text, `"${raw}" is not a valid ${name} value`);
  const v = Number(raw);
  if (v < lo || v > hi) throw invalid(text, `${name} value ${v} is outside ${lo}-${hi}`);
  return v;
}

/** A comma list of `*`, `n`, `a-b` (wrapping when a > b), each optionally with `/step`. */
function parseList(text: string, name: string, field: string, lo: number, hi: number, names?: string[]) {
  const out = new Set<number>();
  for (const item of field.split(',')) {
    const [range, stepRaw, extra] = item.split('/');
    if (extra !== undefined || range === '') throw invalid(text, `"${item}" is not a valid ${name} item`);
    let step = 1;
    if (stepRaw !== undefined) {
      if (!/^\d+$/.test(stepRaw) || Number(stepRaw) < 1)
        throw invalid(text, `"${item}" needs a positive step in ${name}`);
      step = Number(stepRaw);
    }
    let from: number;
    let to: number;
    if (range === '*') [from, to] = [lo, hi];
    else if (range.includes('-')) {
      const [a, b, more] = range.split('-');
      if (more !== undefined || !a || !b) throw invalid(text, `"${item}" is not a valid ${name} range`);
      from = parseValue(text, name, a, lo, hi, names);
      to = parseValue(text, name, b, lo, hi, names);
    } else {
      from = parseValue(text, name, range, lo, hi, names);
      to = stepRaw === undefined ? from : hi;
    }
    const span = to >= from ? to - from : hi - from + 1 + (to - lo);
    for (let i = 0; i <= span; i += step) out.add(((from - lo + i) % (hi - lo + 1)) + lo);
  }
  return [...out].sort((a, b) => a - b);
}

// ---- time zones -------------------------------------------------------------------------------

const formats = new Map<string, Intl.DateTimeFormat>();

function formatFor(timeZone: string): Intl.DateTimeFormat {
  let f = formats.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formats.set(timeZone, f);
  }
  return f;
}

/** Throws 400 VALIDATION_ERROR unless `tz` is an IANA time zone this runtime knows. */
export function assertTimeZone(tz: string): void {
  try {
    formatFor(tz);
  } catch {
    throw validationError(`Unknown time zone "${tz}"; use an IANA name such as Europe/Paris.`, {
      timezone: tz,
    });
  }
}

const isUtc = (tz: string) => tz === 'UTC' || tz === 'Etc/UTC';

/** The wall-clock time in `tz` at instant `t`, expressed as milliseconds of a UTC date. */
export function wallClock(t: number, tz: string): number {
  if (isUtc(tz)) return t;
  const p: Record<string, number> = {};
  for (const part of formatFor(tz).formatToParts(new Date(t))) p[part.type] = Number(part.value);
  return Date.UTC(p.year, p.month - 1, p.day, p.hour, p.minute, p.second) + (t - Math.floor(t / 1000) * 1000);
}

/**
 * The instants whose wall clock in `tz` reads `wall`, earliest first: none in a spring-forward gap,
 * two in a fall-back overlap.
 */
export function instantsOf(wall: number, tz: string): number[] {
  if (isUtc(tz)) return [wall];
  const offsets = new Set([
    wallClock(wall - DAY, tz) - (wall - DAY),
    wallClock(wall + DAY, tz) - (wall + DAY),
  ]);
  const found = new Set<number>();
  for (const off of offsets) {
    const t = wall - off;
    if (wallClock(t, tz) === wall) found.add(t);
  }
  return [...found].sort((a, b) => a - b);
}

// ---- next fire time ----------------------------------------------------------------------------

const daysIn = (y: number, m: number) => new Date(Date.UTC(y, m, 0)).getUTCDate();
/** 1 (Sunday) to 7 (Saturday). */
const weekday = (y: number, m: number, d: number) => new Date(Date.UTC(y, m - 1, d)).getUTCDay() + 1;

function nearestWeekday(y: number, m: number, day: number): number | undefined {
  const dim = daysIn(y, m);
  if (day > dim) return undefined;
  const wd = weekday(y, m, day);
  if (wd === 7) return day === 1 ? 3 : day - 1;
  if (wd === 1) return day === dim ? day - 2 : day + 1;
  return day;
}

function dayMatches(c: CronFields, y: number, m: number, d: number): boolean {
  if (c.dom) {
    const dim = daysIn(y, m);
    switch (c.dom.kind) {
      case 'set':
        return c.dom.days.has(d);
      case 'last':
        return d === dim;
      case 'lastWeekday':
        return d === nearestWeekday(y, m, dim);
      case 'nearestWeekday':
        return d === nearestWeekday(y, m, c.dom.day);
    }
  }
  if (c.dow) {
    const wd = weekday(y, m, d);
    switch (c.dow.kind) {
      case 'set':
        return c.dow.days.has(wd);
      case 'lastOfMonth':
        return wd === c.dow.day && d + 7 > daysIn(y, m);
      case 'nth':
        return wd === c.dow.day && Math.ceil(d / 7) === c.dow.nth;
    }
  }
  return false;
}

function nextCron(c: CronFields, after: number, tz: string): number | null {
  // Any candidate whose wall time is before the wall time of `after` fires (earliest occurrence)
  // before `after`, so the search starts at the minute `after` reads in the zone.
  const start = new Date(Math.floor(wallClock(after, tz) / MINUTE) * MINUTE);
  const [sy, sm, sd, sh, smin] = [
    start.getUTCFullYear(),
    start.getUTCMonth() + 1,
    start.getUTCDate(),
    start.getUTCHours(),
    start.getUTCMinutes(),
  ];
  for (const y of c.years) {
    if (y < sy) continue;
    const atYear = y === sy;
    for (const m of c.months) {
      if (atYear && m < sm) continue;
      const atMonth = atYear && m === sm;
      const dim = daysIn(y, m);
      for (let d = atMonth ? sd : 1; d <= dim; d++) {
        if (!dayMatches(c, y, m, d)) continue;
        const atDay = atMonth && d === sd;
        for (const h of c.hours) {
          if (atDay && h < sh) continue;
          const atHour = atDay && h === sh;
          for (const min of c.minutes) {
            if (atHour && min < smin) continue;
            const first = instantsOf(Date.UTC(y, m - 1, d, h, min), tz)[0];
            if (first !== undefined && first > after) return first;
          }
        }
      }
    }
  }
  return null;
}

/** The instant an `at()` expression names in `tz` (a time inside a spring-forward gap moves forward). */
export function atInstant(expr: ScheduleExpression & { kind: 'at' }, tz = 'UTC'): number {
  const found = instantsOf(expr.wall, tz);
  if (found.length) return found[0];
  return expr.wall - (wallClock(expr.wall - DAY, tz) - (expr.wall - DAY));
}

/**
 * The first fire time strictly after `after`, or null when there is none. A rate repeats every
 * interval from `anchor` (the time the schedule was created; `after` when omitted).
 */
export function nextFireTime(
  input: string | ScheduleExpression,
  after: Date,
  opts: { timezone?: string; anchor?: Date } = {},
): Date | null {
  const expr = parseScheduleExpression(input);
  const tz = opts.timezone ?? 'UTC';
  assertTimeZone(tz);
  const t = after.getTime();
  if (expr.kind === 'rate') {
    const anchor = opts.anchor?.getTime() ?? t;
    if (anchor > t) return new Date(anchor);
    return new Date(anchor + (Math.floor((t - anchor) / expr.everyMs) + 1) * expr.everyMs);
  }
  if (expr.kind === 'at') {
    const at = atInstant(expr, tz);
    return at > t ? new Date(at) : null;
  }
  const next = nextCron(expr.cron, t, tz);
  return next === null ? null : new Date(next);
}

/**
 * When a schedule created at `now` first fires: at once for a rate (EventBridge Scheduler without a
 * start date), the named instant for at() (at once when it is already past), the next match for cron.
 */
export function firstFireTime(input: string | ScheduleExpression, now: Date, timezone = 'UTC'): Date | null {
  const expr = parseScheduleExpression(input);
  assertTimeZone(timezone);
  if (expr.kind === 'rate') return new Date(now.getTime());
  if (expr.kind === 'at') return new Date(atInstant(expr, timezone));
  return nextFireTime(expr, now, { timezone });
}
