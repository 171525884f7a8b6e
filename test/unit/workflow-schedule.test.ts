import { CronExpressionParser } from 'cron-parser';
import { describe, expect, it } from 'vitest';
import { nextFireTime, parseScheduleExpression } from '../../shared/platform/scheduler/expression';
import {
  parseScheduleConfig,
  type ScheduleConfig,
  scheduledMinute,
  scheduleExpressionOf,
} from '../../shared/workflows/schedule';

/**
 * Every preset's EventBridge expression, evaluated by the project's EventBridge evaluator
 * (shared/platform/scheduler/expression.ts), against an independent implementation: cron-parser with
 * the standard 5-field cron a person would write for the same preset (day-of-week 0 = Sunday, as the
 * interface counts).
 */
const standardCron = (cfg: ScheduleConfig): string => {
  switch (cfg.preset) {
    case 'HOURLY':
      return '0 * * * *';
    case 'DAILY':
      return `${cfg.minute} ${cfg.hour} * * *`;
    case 'WEEKLY':
      return `${cfg.minute} ${cfg.hour} * * ${cfg.dayOfWeek}`;
    default:
      throw new Error('not a cron preset');
  }
};

function ours(cfg: ScheduleConfig, from: Date, n: number): string[] {
  const { expression, timezone } = scheduleExpressionOf(cfg);
  const out: string[] = [];
  let t = from;
  for (let i = 0; i < n; i++) {
    const next = nextFireTime(expression, t, { timezone });
    if (!next) break;
    out.push(next.toISOString());
    t = next;
  }
  return out;
}

/**
 * cron-parser fires a wall-clock time that occurs twice (the repeated hour when clocks go back) twice;
 * EventBridge Scheduler fires it once, at the first occurrence. The comparison keeps cron-parser's
 * first occurrence of each wall-clock time (that rule is asserted on its own below).
 */
function theirs(cfg: ScheduleConfig, from: Date, n: number): string[] {
  const tz = cfg.timezone ?? 'UTC';
  const it = CronExpressionParser.parse(standardCron(cfg), { currentDate: from, tz });
  const wall = new Intl.DateTimeFormat('en-US', {
    timeZone: tz,
    dateStyle: 'short',
    timeStyle: 'short',
    hourCycle: 'h23',
  });
  const seen = new Set<string>();
  const out: string[] = [];
  while (out.length < n) {
    const d = it.next().toDate();
    const w = wall.format(d);
    if (seen.has(w)) continue;
    seen.add(w);
    out.push(d.toISOString());
  }
  return out;
}

const cfg = (raw: unknown) => parseScheduleConfig(raw, 'body.triggerConfig');

describe('ScheduleConfig presets → EventBridge Scheduler expressions', () => {
  it('maps each preset to its expression and time zone (UTC by default)', () => {
    expect(scheduleExpressionOf(cfg({ preset: 'EVERY_N_MINUTES', minutes: 15 }))).toEqual({
      expression: 'rate(15 minutes)',
      timezone: 'UTC',
    });
    expect(scheduleExpressionOf(cfg({ preset: 'HOURLY' })).expression).toBe('cron(0 * * * ? *)');
    expect(scheduleExpressionOf(cfg({ preset: 'DAILY', hour: 9 })).expression).toBe('cron(0 9 * * ? *)');
    expect(
      scheduleExpressionOf(
        cfg({ preset: 'WEEKLY', dayOfWeek: 0, hour: 9, minute: 30, timezone: 'Asia/Tokyo' }),
      ),
    ).toEqual({ expression: 'cron(30 9 ? * SUN *)', timezone: 'Asia/Tokyo' });
    // Every expression is one EventBridge Scheduler accepts.
    for (const raw of [
      { preset: 'EVERY_N_MINUTES', minutes: 5 },
      { preset: 'EVERY_N_MINUTES', minutes: 43_200 },
      { preset: 'HOURLY' },
      { preset: 'DAILY', hour: 23, minute: 59 },
      ...[0, 1, 2, 3, 4, 5, 6].map((d) => ({ preset: 'WEEKLY', dayOfWeek: d, hour: 0 })),
    ])
      expect(() => parseScheduleExpression(scheduleExpressionOf(cfg(raw)).expression)).not.toThrow();
  });

  it('day-of-week: interface 0 = Sunday … 6 = Saturday lands on that weekday (EventBridge 1 = SUN)', () => {
    const from = new Date('2026-03-04T12:00:00Z'); // a Wednesday
    for (let d = 0; d <= 6; d++) {
      const c = cfg({ preset: 'WEEKLY', dayOfWeek: d, hour: 8, minute: 15 });
      const times = ours(c, from, 5);
      for (const t of times) expect(new Date(t).getUTCDay()).toBe(d);
      expect(times).toEqual(theirs(c, from, 5));
    }
  });

  const zones = [
    'UTC',
    'America/New_York',
    'Europe/Berlin',
    'Australia/Sydney',
    'Asia/Kolkata',
    'Asia/Kathmandu', // +05:45
    // (Australia/Lord_Howe, with its 30-minute DST shift, makes cron-parser 5.10 loop: not compared.)
    'America/Sao_Paulo',
  ];
  const starts = [
    '2026-01-01T00:00:00Z',
    '2026-03-07T00:00:00Z',
    '2026-10-02T00:00:00Z',
    '2026-10-30T00:00:00Z',
  ];

  it('agrees with cron-parser for every cron preset across time zones and DST changes', () => {
    const presets = [
      { preset: 'HOURLY' },
      { preset: 'DAILY', hour: 9, minute: 0 },
      { preset: 'DAILY', hour: 0, minute: 30 },
      { preset: 'DAILY', hour: 23, minute: 45 },
      { preset: 'WEEKLY', dayOfWeek: 0, hour: 12, minute: 0 },
      { preset: 'WEEKLY', dayOfWeek: 6, hour: 18, minute: 5 },
    ];
    for (const tz of zones)
      for (const start of starts)
        for (const p of presets) {
          const c = cfg({ ...p, timezone: tz });
          const n = p.preset === 'HOURLY' ? 60 : 20;
          expect(ours(c, new Date(start), n), `${JSON.stringify(p)} in ${tz} from ${start}`).toEqual(
            theirs(c, new Date(start), n),
          );
        }
  });

  it('an hourly schedule fires the repeated hour of the fall-back night once (cron-parser: twice)', () => {
    const c = cfg({ preset: 'HOURLY', timezone: 'America/New_York' });
    const from = new Date('2026-11-01T03:30:00Z');
    expect(ours(c, from, 3)).toEqual([
      '2026-11-01T04:00:00.000Z',
      '2026-11-01T05:00:00.000Z',
      '2026-11-01T07:00:00.000Z',
    ]);
    const raw = CronExpressionParser.parse('0 * * * *', { currentDate: from, tz: 'America/New_York' });
    expect([1, 2, 3].map(() => raw.next().toDate().toISOString())).toEqual([
      '2026-11-01T04:00:00.000Z',
      '2026-11-01T05:00:00.000Z',
      '2026-11-01T06:00:00.000Z', // 01:00 EST, the second 01:00
    ]);
  });

  it('keeps the local wall-clock time across DST (09:00 in New York is 14:00Z in winter, 13:00Z in summer)', () => {
    const c = cfg({ preset: 'DAILY', hour: 9, timezone: 'America/New_York' });
    const times = ours(c, new Date('2026-03-06T00:00:00Z'), 4);
    expect(times).toEqual([
      '2026-03-06T14:00:00.000Z',
      '2026-03-07T14:00:00.000Z',
      '2026-03-08T13:00:00.000Z', // DST began at 02:00 local on March 8
      '2026-03-09T13:00:00.000Z',
    ]);
  });

  it('a daily time inside the spring-forward gap is skipped that day, and fires once on the fall-back day', () => {
    // EventBridge Scheduler skips a cron time that does not exist and fires a repeated time once.
    const gap = cfg({ preset: 'DAILY', hour: 2, minute: 30, timezone: 'America/New_York' });
    expect(ours(gap, new Date('2026-03-07T00:00:00Z'), 3)).toEqual([
      '2026-03-07T07:30:00.000Z',
      '2026-03-09T06:30:00.000Z', // no 02:30 on 2026-03-08
      '2026-03-10T06:30:00.000Z',
    ]);
    const overlap = cfg({ preset: 'DAILY', hour: 1, minute: 30, timezone: 'America/New_York' });
    expect(ours(overlap, new Date('2026-10-31T12:00:00Z'), 3)).toEqual([
      '2026-11-01T05:30:00.000Z', // the first 01:30 (EDT) only
      '2026-11-02T06:30:00.000Z',
      '2026-11-03T06:30:00.000Z',
    ]);
  });

  it('EVERY_N_MINUTES is a fixed rate independent of the time zone and DST', () => {
    const c = cfg({ preset: 'EVERY_N_MINUTES', minutes: 90, timezone: 'America/New_York' });
    const { expression, timezone } = scheduleExpressionOf(c);
    const anchor = new Date('2026-03-08T05:00:00Z'); // across the DST change
    let t = anchor;
    for (let i = 1; i <= 5; i++) {
      t = nextFireTime(expression, t, { timezone, anchor })!;
      expect(t.getTime() - anchor.getTime()).toBe(i * 90 * 60_000);
    }
  });

  it('accepts a JSON-encoded string and refuses bad configurations naming the field', () => {
    expect(cfg('{"preset":"DAILY","hour":7}')).toEqual({ preset: 'DAILY', hour: 7, minute: 0 });
    const bad: [unknown, string][] = [
      ['{not json', 'body.triggerConfig'],
      [{ preset: 'EVERY_N_MINUTES', minutes: 4 }, 'body.triggerConfig.minutes'],
      [{ preset: 'EVERY_N_MINUTES', minutes: 43_201 }, 'body.triggerConfig.minutes'],
      [{ preset: 'EVERY_N_MINUTES', minutes: 5.5 }, 'body.triggerConfig.minutes'],
      [{ preset: 'DAILY' }, 'body.triggerConfig.hour'],
      [{ preset: 'DAILY', hour: 24 }, 'body.triggerConfig.hour'],
      [{ preset: 'DAILY', hour: 1, minute: 60 }, 'body.triggerConfig.minute'],
      [{ preset: 'WEEKLY', dayOfWeek: 7, hour: 1 }, 'body.triggerConfig.dayOfWeek'],
      [{ preset: 'WEEKLY', hour: 1 }, 'body.triggerConfig.dayOfWeek'],
      [{ preset: 'MONTHLY' }, 'body.triggerConfig.preset'],
      [{ preset: 'HOURLY', timezone: 'Mars/Olympus' }, 'body.triggerConfig.timezone'],
      [[], 'body.triggerConfig'],
    ];
    for (const [raw, path] of bad) {
      let caught: any;
      try {
        cfg(raw);
      } catch (e) {
        caught = e;
      }
      expect(caught?.code, JSON.stringify(raw)).toBe('VALIDATION_ERROR');
      expect(caught.details.issues.map((i: { path: string }) => i.path)).toContain(path);
    }
  });

  it('scheduledFor is the minute the run was due', () => {
    expect(scheduledMinute('2026-05-01T09:00:41Z', 0)).toBe('2026-05-01T09:00:00.000Z');
    expect(scheduledMinute(undefined, Date.parse('2026-05-01T09:07:13.5Z'))).toBe('2026-05-01T09:07:00.000Z');
  });
});
