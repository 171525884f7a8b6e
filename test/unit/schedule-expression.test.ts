import { describe, expect, it } from 'vitest';
import {
  firstFireTime,
  instantsOf,
  nextFireTime,
  parseScheduleExpression,
} from '../../shared/platform/scheduler/expression';

/** The next `count` fire times after `after`, as ISO strings. */
function fires(expr: string, after: string, count: number, timezone?: string, anchor?: string): string[] {
  const out: string[] = [];
  let t = new Date(after);
  for (let i = 0; i < count; i++) {
    const next = nextFireTime(expr, t, { timezone, anchor: anchor ? new Date(anchor) : undefined });
    if (!next) break;
    out.push(next.toISOString().replace('.000Z', 'Z'));
    t = next;
  }
  return out;
}

describe('rate expressions', () => {
  it('repeats every interval from the anchor', () => {
    expect(fires('rate(5 minutes)', '2026-01-01T00:07:00Z', 3, 'UTC', '2026-01-01T00:01:00Z')).toEqual([
      '2026-01-01T00:11:00Z',
      '2026-01-01T00:16:00Z',
      '2026-01-01T00:21:00Z',
    ]);
    expect(fires('rate(1 hour)', '2026-01-01T00:00:00Z', 2)).toEqual([
      '2026-01-01T01:00:00Z',
      '2026-01-01T02:00:00Z',
    ]);
  });

  it('counts a day as 24 hours, across a daylight-saving change too', () => {
    expect(fires('rate(1 day)', '2026-03-07T12:00:00Z', 2, 'America/New_York')).toEqual([
      '2026-03-08T12:00:00Z',
      '2026-03-09T12:00:00Z',
    ]);
  });

  it('starts at once when created (no start date)', () => {
    expect(firstFireTime('rate(2 hours)', new Date('2026-01-01T10:30:00Z'))?.toISOString()).toBe(
      '2026-01-01T10:30:00.000Z',
    );
  });

  it('requires the singular unit with 1 and the plural otherwise, as EventBridge does', () => {
    for (const bad of [
      'rate(1 minutes)',
      'rate(2 minute)',
      'rate(0 minutes)',
      'rate(5 weeks)',
      'rate(five minutes)',
    ])
      expect(() => parseScheduleExpression(bad), bad).toThrow(/Invalid schedule expression/);
    expect(parseScheduleExpression('rate(1 day)')).toMatchObject({ kind: 'rate', everyMs: 86_400_000 });
  });
});

describe('cron expressions', () => {
  it('fires at fixed times each day, strictly after the given time', () => {
    expect(fires('cron(0 9 * * ? *)', '2026-03-01T09:00:00Z', 2)).toEqual([
      '2026-03-02T09:00:00Z',
      '2026-03-03T09:00:00Z',
    ]);
    expect(fires('cron(0 9 * * ? *)', '2026-03-01T08:59:59Z', 1)).toEqual(['2026-03-01T09:00:00Z']);
  });

  it('supports lists, ranges, steps and month and weekday names', () => {
    expect(fires('cron(0/20 8-9 * * ? *)', '2026-03-01T00:00:00Z', 7)).toEqual([
      '2026-03-01T08:00:00Z',
      '2026-03-01T08:20:00Z',
      '2026-03-01T08:40:00Z',
      '2026-03-01T09:00:00Z',
      '2026-03-01T09:20:00Z',
      '2026-03-01T09:40:00Z',
      '2026-03-02T08:00:00Z',
    ]);
    // Monday to Friday at 18:15 — 2026-03-06 is a Friday
    expect(fires('cron(15 18 ? * MON-FRI *)', '2026-03-06T19:00:00Z', 2)).toEqual([
      '2026-03-09T18:15:00Z',
      '2026-03-10T18:15:00Z',
    ]);
    expect(fires('cron(0 0 1 JAN,JUL ? *)', '2026-02-01T00:00:00Z', 2)).toEqual([
      '2026-07-01T00:00:00Z',
      '2027-01-01T00:00:00Z',
    ]);
    expect(fires('cron(0 22-2/2 * * ? *)', '2026-03-01T12:00:00Z', 3)).toEqual([
      '2026-03-01T22:00:00Z',
      '2026-03-02T00:00:00Z',
      '2026-03-02T02:00:00Z',
    ]);
  });

  it('supports L, LW and nW in day-of-month', () => {
    expect(fires('cron(0 12 L * ? *)', '2026-01-15T00:00:00Z', 3)).toEqual([
      '2026-01-31T12:00:00Z',
      '2026-02-28T12:00:00Z',
      '2026-03-31T12:00:00Z',
    ]);
    // 2026-01-31 is a Saturday: the last weekday is Friday the 30th
    expect(fires('cron(0 12 LW * ? *)', '2026-01-01T00:00:00Z', 1)).toEqual(['2026-01-30T12:00:00Z']);
    // 2026-02-01 is a Sunday: the nearest weekday in the month is Monday the 2nd
    expect(fires('cron(0 12 1W * ? *)', '2026-01-15T00:00:00Z', 1)).toEqual(['2026-02-02T12:00:00Z']);
  });

  it('supports nL (last weekday n of the month) and n#k (k-th weekday n) in day-of-week', () => {
    expect(fires('cron(0 10 ? * 6L *)', '2026-01-01T00:00:00Z', 2)).toEqual([
      '2026-01-30T10:00:00Z',
      '2026-02-27T10:00:00Z',
    ]);
    expect(fires('cron(0 10 ? * MON#1 *)', '2026-01-01T00:00:00Z', 2)).toEqual([
      '2026-01-05T10:00:00Z',
      '2026-02-02T10:00:00Z',
    ]);
  });

  it('skips years and dates that do not match and ends after the last year', () => {
    expect(fires('cron(0 0 29 2 ? *)', '2026-01-01T00:00:00Z', 2)).toEqual([
      '2028-02-29T00:00:00Z',
      '2032-02-29T00:00:00Z',
    ]);
    expect(fires('cron(0 0 1 1 ? 2027)', '2026-06-01T00:00:00Z', 3)).toEqual(['2027-01-01T00:00:00Z']);
  });

  it('evaluates times in the schedule time zone', () => {
    expect(fires('cron(0 9 * * ? *)', '2026-01-09T20:00:00Z', 1, 'Asia/Tokyo')).toEqual([
      '2026-01-10T00:00:00Z',
    ]);
    expect(fires('cron(0 9 * * ? *)', '2026-01-10T00:00:00Z', 1, 'Europe/Paris')).toEqual([
      '2026-01-10T08:00:00Z',
    ]);
    expect(fires('cron(0 9 * * ? *)', '2026-07-10T00:00:00Z', 1, 'Europe/Paris')).toEqual([
      '2026-07-10T07:00:00Z',
    ]);
  });

  it('skips a time that does not exist when clocks spring forward', () => {
    // New York moves from 02:00 to 03:00 on 2026-03-08
    expect(fires('cron(30 2 * * ? *)', '2026-03-07T00:00:00Z', 3, 'America/New_York')).toEqual([
      '2026-03-07T07:30:00Z',
      '2026-03-09T06:30:00Z',
      '2026-03-10T06:30:00Z',
    ]);
  });

  it('fires once for a time that occurs twice when clocks fall back', () => {
    // New York moves from 02:00 back to 01:00 on 2026-11-01: 01:30 happens at 05:30Z and 06:30Z
    expect(instantsOf(Date.UTC(2026, 10, 1, 1, 30), 'America/New_York')).toHaveLength(2);
    expect(fires('cron(30 1 * * ? *)', '2026-10-31T12:00:00Z', 3, 'America/New_York')).toEqual([
      '2026-11-01T05:30:00Z',
      '2026-11-02T06:30:00Z',
      '2026-11-03T06:30:00Z',
    ]);
  });

  it('rejects malformed expressions with a message naming the problem', () => {
    const cases: Array<[string, RegExp]> = [
      ['cron(0 9 * * * *)', /exactly one of day-of-month and day-of-week/],
      ['cron(0 9 ? * ? *)', /exactly one of day-of-month and day-of-week/],
      ['cron(0 9 * *)', /6 fields/],
      ['cron(60 9 * * ? *)', /minutes value 60/],
      ['cron(0 24 * * ? *)', /hours value 24/],
      ['cron(0 9 * 13 ? *)', /month value 13/],
      ['cron(0 9 ? * 8 *)', /day-of-week value 8/],
      ['cron(0 9 * * ? 2200)', /year value 2200/],
      ['cron(0 9 ? * 2#6 *)', /occurrence must be 1-5/],
      ['cron(0/0 9 * * ? *)', /positive step/],
      ['cron(0 9 L,3 * ? *)', /stand alone/],
      ['every 5 minutes', /expected rate/],
    ];
    for (const [expr, message] of cases) {
      expect(() => parseScheduleExpression(expr), expr).toThrow(message);
      try {
        parseScheduleExpression(expr);
      } catch (e) {
        expect((e as { status?: number }).status).toBe(400);
      }
    }
  });
});

describe('at expressions', () => {
  it('fires once at the named local time and never again', () => {
    expect(fires('at(2026-06-01T09:00:00)', '2026-01-01T00:00:00Z', 3, 'Europe/Paris')).toEqual([
      '2026-06-01T07:00:00Z',
    ]);
    expect(nextFireTime('at(2026-06-01T09:00:00)', new Date('2026-06-01T09:00:00Z'))).toBeNull();
  });

  it('is due at once when created after its time has passed', () => {
    const now = new Date('2026-06-02T00:00:00Z');
    expect(firstFireTime('at(2026-06-01T09:00:00)', now)?.toISOString()).toBe('2026-06-01T09:00:00.000Z');
  });

  it('moves a time inside a spring-forward gap forward', () => {
    // 02:30 does not exist in New York on 2026-03-08; it runs at 03:30 EDT
    expect(firstFireTime('at(2026-03-08T02:30:00)', new Date(0), 'America/New_York')?.toISOString()).toBe(
      '2026-03-08T07:30:00.000Z',
    );
  });

  it('rejects impossible dates and unknown time zones', () => {
    expect(() => parseScheduleExpression('at(2026-02-30T00:00:00)')).toThrow(/not a valid date/);
    expect(() => parseScheduleExpression('at(2026-02-03 00:00)')).toThrow(/at\(yyyy-mm-ddThh:mm:ss\)/);
    expect(() => nextFireTime('cron(0 9 * * ? *)', new Date(), { timezone: 'Nowhere/Land' })).toThrow(
      /Unknown time zone/,
    );
  });
});
