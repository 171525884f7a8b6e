import { describe, expect, it } from 'vitest';
import {
  CATCH_UP_WINDOW_MS,
  type Cadence,
  catchUpTarget,
  dueMinute,
  dueTimesThrough,
  gridPointAtOrAfter,
  nextDue,
  rateOf,
  rateStartAt,
} from '../../shared/workflows/due-times';
import { parseScheduleConfig, scheduleExpressionOf } from '../../shared/workflows/schedule';

/**
 * The due times the missed-runs sweep checks runs against (shared/workflows/due-times.ts): a workflow's
 * preset, in its time zone, with the daylight-saving rules EventBridge Scheduler applies. Each case lists
 * every due time of a window around a clock change, in UTC, worked out by hand from the zone's rules.
 */
const cadence = (raw: unknown, anchorAt = 0): Cadence => {
  const { expression, timezone } = scheduleExpressionOf(parseScheduleConfig(raw, 'triggerConfig'));
  return { expression, timezone, anchorAt };
};
const iso = (ts: number[]) => ts.map((t) => new Date(t).toISOString());
const at = (s: string) => Date.parse(s);

/** Every due time from `from` (exclusive) through `to` (inclusive). */
function dueBetween(c: Cadence, from: string, to: string): string[] {
  const first = nextDue(c, at(from));
  if (first === null) return [];
  return iso(dueTimesThrough(c, first, at(to), 1000).due);
}

describe('due times of cron presets around clock changes', () => {
  it('DAILY 02:30 in Paris: none on the spring-forward day (02:30 does not exist)', () => {
    const c = cadence({ preset: 'DAILY', hour: 2, minute: 30, timezone: 'Europe/Paris' });
    expect(dueBetween(c, '2026-03-28T00:00:00Z', '2026-03-31T00:00:00Z')).toEqual([
      '2026-03-28T01:30:00.000Z', // 02:30 CET
      // 29 March: clocks jump from 02:00 to 03:00, nothing is due
      '2026-03-30T00:30:00.000Z', // 02:30 CEST
    ]);
  });

  it('DAILY 02:30 in Paris: once on the fall-back day, at the first 02:30 (summer time)', () => {
    const c = cadence({ preset: 'DAILY', hour: 2, minute: 30, timezone: 'Europe/Paris' });
    expect(dueBetween(c, '2026-10-24T00:00:00Z', '2026-10-27T00:00:00Z')).toEqual([
      '2026-10-24T00:30:00.000Z',
      '2026-10-25T00:30:00.000Z', // 02:30 CEST; the second 02:30 (01:30Z, CET) is not due
      '2026-10-26T01:30:00.000Z',
    ]);
  });

  it('DAILY 09:00 in Paris moves by an hour in UTC across the change, and a day is 23 or 25 hours', () => {
    const c = cadence({ preset: 'DAILY', hour: 9, minute: 0, timezone: 'Europe/Paris' });
    const spring = dueBetween(c, '2026-03-28T00:00:00Z', '2026-03-30T23:00:00Z');
    expect(spring).toEqual([
      '2026-03-28T08:00:00.000Z',
      '2026-03-29T07:00:00.000Z',
      '2026-03-30T07:00:00.000Z',
    ]);
    expect(at(spring[1]) - at(spring[0])).toBe(23 * 3_600_000);
    const autumn = dueBetween(c, '2026-10-24T00:00:00Z', '2026-10-25T23:00:00Z');
    expect(autumn).toEqual(['2026-10-24T07:00:00.000Z', '2026-10-25T08:00:00.000Z']);
    expect(at(autumn[1]) - at(autumn[0])).toBe(25 * 3_600_000);
  });

  it('HOURLY in New York: continuous in UTC when 02:00 is skipped, a two-hour gap when 01:00 repeats', () => {
    const c = cadence({ preset: 'HOURLY', timezone: 'America/New_York' });
    expect(dueBetween(c, '2026-03-08T04:30:00Z', '2026-03-08T08:00:00Z')).toEqual([
      '2026-03-08T05:00:00.000Z', // 00:00 EST
      '2026-03-08T06:00:00.000Z', // 01:00 EST
      '2026-03-08T07:00:00.000Z', // 03:00 EDT (02:00 does not exist)
      '2026-03-08T08:00:00.000Z',
    ]);
    expect(dueBetween(c, '2026-11-01T03:30:00Z', '2026-11-01T08:00:00Z')).toEqual([
      '2026-11-01T04:00:00.000Z', // 00:00 EDT
      '2026-11-01T05:00:00.000Z', // 01:00 EDT
      // 06:00Z is 01:00 EST, the repeated hour: not due (a run missing there is not missed)
      '2026-11-01T07:00:00.000Z', // 02:00 EST
      '2026-11-01T08:00:00.000Z',
    ]);
  });

  it('Lord Howe Island shifts by 30 minutes: DAILY 02:15 skipped in spring, DAILY 01:45 once in autumn', () => {
    const spring = cadence({ preset: 'DAILY', hour: 2, minute: 15, timezone: 'Australia/Lord_Howe' });
    expect(dueBetween(spring, '2026-10-02T00:00:00Z', '2026-10-05T00:00:00Z')).toEqual([
      '2026-10-02T15:45:00.000Z', // 3 October 02:15 at +10:30
      // 4 October: 02:00 jumps to 02:30, nothing is due
      '2026-10-04T15:15:00.000Z', // 5 October 02:15 at +11
    ]);
    const autumn = cadence({ preset: 'DAILY', hour: 1, minute: 45, timezone: 'Australia/Lord_Howe' });
    expect(dueBetween(autumn, '2026-04-03T00:00:00Z', '2026-04-06T00:00:00Z')).toEqual([
      '2026-04-03T14:45:00.000Z',
      '2026-04-04T14:45:00.000Z', // 5 April 01:45 at +11, the first of two
      '2026-04-05T15:15:00.000Z', // 6 April 01:45 at +10:30
    ]);
  });

  it('WEEKLY Monday 09:00 in Kolkata (+05:30, no daylight saving) and in UTC by default', () => {
    const kolkata = cadence({ preset: 'WEEKLY', dayOfWeek: 1, hour: 9, timezone: 'Asia/Kolkata' });
    expect(dueBetween(kolkata, '2026-03-01T00:00:00Z', '2026-03-16T03:30:00Z')).toEqual([
      '2026-03-02T03:30:00.000Z',
      '2026-03-09T03:30:00.000Z',
      '2026-03-16T03:30:00.000Z', // `until` is inclusive
    ]);
    const utc = cadence({ preset: 'WEEKLY', dayOfWeek: 0, hour: 23, minute: 59 });
    expect(dueBetween(utc, '2026-03-01T00:00:00Z', '2026-03-15T00:00:00Z')).toEqual([
      '2026-03-01T23:59:00.000Z',
      '2026-03-08T23:59:00.000Z',
    ]);
  });

  it('WEEKLY Sunday 02:30 in New York on the spring-forward Sunday: that week has no due time', () => {
    const c = cadence({ preset: 'WEEKLY', dayOfWeek: 0, hour: 2, minute: 30, timezone: 'America/New_York' });
    expect(dueBetween(c, '2026-03-01T00:00:00Z', '2026-03-16T00:00:00Z')).toEqual([
      '2026-03-01T07:30:00.000Z',
      // 8 March 02:30 does not exist
      '2026-03-15T06:30:00.000Z',
    ]);
  });

  it('Samoa skipped 30 December 2011 (across the date line): its midnights stay 24 hours apart', () => {
    const c = cadence({ preset: 'DAILY', hour: 0, timezone: 'Pacific/Apia' });
    expect(dueBetween(c, '2011-12-28T00:00:00Z', '2011-12-31T12:00:00Z')).toEqual([
      '2011-12-28T10:00:00.000Z', // 29 December 00:00 at -10
      '2011-12-29T10:00:00.000Z', // 29 → 31 December: no 30th
      '2011-12-30T10:00:00.000Z', // 31 December 00:00 at +14
      '2011-12-31T10:00:00.000Z',
    ]);
  });

  it('lists at most `max` due times and says where the next pass starts', () => {
    const c = cadence({ preset: 'HOURLY' });
    const r = dueTimesThrough(c, at('2026-01-01T00:00:00Z'), at('2026-01-02T00:00:00Z'), 5);
    expect(iso(r.due)).toHaveLength(5);
    expect(new Date(r.next!).toISOString()).toBe('2026-01-01T05:00:00.000Z');
    const none = dueTimesThrough(c, at('2026-01-01T05:00:00Z'), at('2026-01-01T04:59:59Z'), 5);
    expect(none.due).toEqual([]);
    expect(new Date(none.next!).toISOString()).toBe('2026-01-01T05:00:00.000Z');
  });
});

describe('due times of rates', () => {
  it('a rate is a fixed grid from its start, whatever the time zone or clock change', () => {
    const c = cadence(
      { preset: 'EVERY_N_MINUTES', minutes: 90, timezone: 'Europe/Paris' },
      at('2026-03-29T00:00:00Z'),
    );
    expect(rateOf(c.expression)).toBe(90 * 60_000);
    expect(dueBetween(c, '2026-03-28T00:00:00Z', '2026-03-29T03:00:00Z')).toEqual([
      '2026-03-29T00:00:00.000Z', // the start itself
      '2026-03-29T01:30:00.000Z', // 02:00 CET becomes 03:00 CEST at 01:00Z: a rate does not care
      '2026-03-29T03:00:00.000Z',
    ]);
    expect(rateOf('cron(0 * * * ? *)')).toBeNull();
  });

  it('a new grid starts on the first whole minute at least 30 s ahead; an existing one keeps its points', () => {
    expect(new Date(rateStartAt(at('2026-05-01T10:00:00Z'))).toISOString()).toBe('2026-05-01T10:01:00.000Z');
    expect(new Date(rateStartAt(at('2026-05-01T10:00:29.999Z'))).toISOString()).toBe(
      '2026-05-01T10:01:00.000Z',
    );
    expect(new Date(rateStartAt(at('2026-05-01T10:00:30.001Z'))).toISOString()).toBe(
      '2026-05-01T10:02:00.000Z',
    );
    const anchor = at('2026-05-01T10:01:00Z');
    const five = 5 * 60_000;
    expect(gridPointAtOrAfter(anchor, five, at('2026-05-01T09:00:00Z'))).toBe(anchor);
    expect(gridPointAtOrAfter(anchor, five, anchor)).toBe(anchor);
    expect(new Date(gridPointAtOrAfter(anchor, five, at('2026-05-01T10:06:00Z'))).toISOString()).toBe(
      '2026-05-01T10:06:00.000Z',
    );
    expect(new Date(gridPointAtOrAfter(anchor, five, at('2026-05-01T10:06:00.001Z'))).toISOString()).toBe(
      '2026-05-01T10:11:00.000Z',
    );
  });

  it('the key of a due time is its minute, as a run records it in scheduledFor', () => {
    expect(dueMinute(at('2026-05-01T10:06:42.123Z'))).toBe('2026-05-01T10:06:00.000Z');
    expect(dueMinute(at('2026-05-01T10:06:00Z'))).toBe('2026-05-01T10:06:00.000Z');
  });
});

describe('which missed due time is made up', () => {
  const nine = at('2026-03-02T08:00:00Z');
  const DAY = 86_400_000;

  it('the latest missed one, when no later due time was claimed and it is at most a day old', () => {
    expect(catchUpTarget([nine], [], nine + 3 * 60_000)).toBe(nine);
    expect(catchUpTarget([nine - DAY, nine], [nine - 2 * DAY], nine + 3 * 60_000)).toBe(nine);
    expect(catchUpTarget([nine], [nine], nine + 3 * 60_000)).toBe(nine); // its own (abandoned) claim
    expect(catchUpTarget([], [], nine)).toBeNull();
    expect(catchUpTarget([nine], [], nine + CATCH_UP_WINDOW_MS)).toBe(nine);
  });

  it('none when a later due time was claimed (its run supersedes it) or it is older than a day', () => {
    expect(catchUpTarget([nine], [nine + DAY], nine + DAY + 60_000)).toBeNull();
    expect(catchUpTarget([nine - DAY, nine], [nine + 60 * 60_000], nine + 2 * 60 * 60_000)).toBeNull();
    expect(catchUpTarget([nine], [], nine + CATCH_UP_WINDOW_MS + 1)).toBeNull();
  });
});
