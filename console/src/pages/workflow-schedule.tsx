/**
 * A workflow's schedule in the builder: the API's ScheduleConfig presets (every N minutes, hourly,
 * daily, weekly) with a time zone, and the cron expression EventBridge Scheduler runs for it.
 */
export type Preset = 'EVERY_N_MINUTES' | 'HOURLY' | 'DAILY' | 'WEEKLY';

export interface ScheduleForm {
  preset: Preset;
  minutes: string;
  /** HH:MM, as an `<input type="time">` gives it. */
  time: string;
  dayOfWeek: string;
  timezone: string;
}

const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const CRON_DAYS = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];

/** The browser's own time zone (what a person means by "9:00"), UTC when it cannot say. */
export const localTimeZone = () => Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';

/** Every IANA name the browser knows, for the Timezone field's suggestions. */
function timeZones(): string[] {
  const intl = Intl as unknown as { supportedValuesOf?: (key: string) => string[] };
  return intl.supportedValuesOf?.('timeZone') ?? [];
}

const two = (n: unknown) => String(Number(n) || 0).padStart(2, '0');

/** The form of a stored triggerConfig (JSON text), or a daily 09:00 in the browser's zone. */
export function scheduleFormOf(json: string | null): ScheduleForm {
  const fallback: ScheduleForm = {
    preset: 'DAILY',
    minutes: '60',
    time: '09:00',
    dayOfWeek: '1',
    timezone: localTimeZone(),
  };
  try {
    const c = JSON.parse(json ?? 'null');
    if (!c || typeof c !== 'object' || !['EVERY_N_MINUTES', 'HOURLY', 'DAILY', 'WEEKLY'].includes(c.preset))
      return fallback;
    return {
      preset: c.preset,
      minutes: c.minutes !== undefined ? String(c.minutes) : fallback.minutes,
      time: c.hour !== undefined ? `${two(c.hour)}:${two(c.minute)}` : fallback.time,
      dayOfWeek: c.dayOfWeek !== undefined ? String(c.dayOfWeek) : fallback.dayOfWeek,
      timezone: typeof c.timezone === 'string' ? c.timezone : 'UTC',
    };
  } catch {
    return fallback;
  }
}

/**
 * The ScheduleConfig the API takes. Fields are sent as typed (a number field left empty is sent as
 * written, so the API's message names it) and the API decides what is valid.
 */
export function scheduleConfigOf(f: ScheduleForm): Record<string, unknown> {
  const [hour, minute] = f.time.split(':');
  const num = (s: string | undefined) => (s !== undefined && /^\d+$/.test(s.trim()) ? Number(s) : s);
  const timezone = f.timezone.trim();
  const base = { preset: f.preset, ...(timezone ? { timezone } : {}) };
  switch (f.preset) {
    case 'EVERY_N_MINUTES':
      return { ...base, minutes: num(f.minutes) };
    case 'HOURLY':
      return base;
    case 'DAILY':
      return { ...base, hour: num(hour), minute: num(minute) };
    case 'WEEKLY':
      return { ...base, dayOfWeek: num(f.dayOfWeek), hour: num(hour), minute: num(minute) };
  }
}

/** The scheduler's expression for the form (as shared/workflows/schedule.ts builds it), or null. */
export function cronOf(f: ScheduleForm): string | null {
  const [h, m] = f.time.split(':').map(Number);
  const okTime = Number.isInteger(h) && Number.isInteger(m);
  switch (f.preset) {
    case 'EVERY_N_MINUTES':
      return /^\d+$/.test(f.minutes.trim()) ? `rate(${Number(f.minutes)} minutes)` : null;
    case 'HOURLY':
      return 'cron(0 * * * ? *)';
    case 'DAILY':
      return okTime ? `cron(${m} ${h} * * ? *)` : null;
    case 'WEEKLY':
      return okTime ? `cron(${m} ${h} ? * ${CRON_DAYS[Number(f.dayOfWeek)] ?? '?'} *)` : null;
  }
}

/** In words, for the workflow's page: "Every day at 09:30 (Europe/Paris)". */
export function scheduleText(json: string | null): string {
  const f = scheduleFormOf(json);
  const zone = ` (${f.timezone})`;
  switch (f.preset) {
    case 'EVERY_N_MINUTES':
      return `Every ${f.minutes} minutes${zone}`;
    case 'HOURLY':
      return `Every hour, on the hour${zone}`;
    case 'DAILY':
      return `Every day at ${f.time}${zone}`;
    case 'WEEKLY':
      return `Every ${DAYS[Number(f.dayOfWeek)] ?? '?'} at ${f.time}${zone}`;
  }
}

/** The schedule's fields; `errors` are the API's messages by field (`triggerConfig.hour`…). */
export function ScheduleFields({
  prefix,
  value: f,
  onChange,
  errors,
}: {
  prefix: string;
  value: ScheduleForm;
  onChange: (f: ScheduleForm) => void;
  errors: Record<string, string>;
}) {
  const error = (k: string) => errors[`triggerConfig.${k}`];
  const described = (k: string) =>
    error(k) ? { 'aria-invalid': true as const, 'aria-describedby': `${prefix}-schedule-${k}-error` } : {};
  const message = (k: string) =>
    error(k) && (
      <span id={`${prefix}-schedule-${k}-error`} class="field-error">
        {error(k)}
      </span>
    );
  const cron = cronOf(f);
  const zones = timeZones();
  return (
    <fieldset>
      <legend>Schedule</legend>
      <div class="field">
        <label for={`${prefix}-preset`}>Repeat</label>
        <select
          id={`${prefix}-preset`}
          value={f.preset}
          onChange={(e) => onChange({ ...f, preset: e.currentTarget.value as Preset })}
        >
          <option value="EVERY_N_MINUTES">Every few minutes</option>
          <option value="HOURLY">Every hour</option>
          <option value="DAILY">Every day</option>
          <option value="WEEKLY">Every week</option>
        </select>
      </div>
      {f.preset === 'EVERY_N_MINUTES' && (
        <div class="field">
          <label for={`${prefix}-minutes`}>Minutes between runs (5 to 43200)</label>
          <input
            id={`${prefix}-minutes`}
            inputMode="numeric"
            value={f.minutes}
            onInput={(e) => onChange({ ...f, minutes: e.currentTarget.value })}
            {...described('minutes')}
          />
          {message('minutes')}
        </div>
      )}
      {f.preset === 'WEEKLY' && (
        <div class="field">
          <label for={`${prefix}-day`}>Day</label>
          <select
            id={`${prefix}-day`}
            value={f.dayOfWeek}
            onChange={(e) => onChange({ ...f, dayOfWeek: e.currentTarget.value })}
          >
            {DAYS.map((d, i) => (
              <option key={d} value={String(i)}>
                {d}
              </option>
            ))}
          </select>
        </div>
      )}
      {(f.preset === 'DAILY' || f.preset === 'WEEKLY') && (
        <div class="field">
          <label for={`${prefix}-time`}>Time</label>
          <input
            id={`${prefix}-time`}
            type="time"
            value={f.time}
            onInput={(e) => onChange({ ...f, time: e.currentTarget.value })}
            {...described(error('hour') ? 'hour' : 'minute')}
          />
          {message('hour') || message('minute')}
        </div>
      )}
      <div class="field">
        <label for={`${prefix}-timezone`}>Timezone</label>
        <input
          id={`${prefix}-timezone`}
          list={`${prefix}-timezones`}
          autocomplete="off"
          value={f.timezone}
          onInput={(e) => onChange({ ...f, timezone: e.currentTarget.value })}
          {...described('timezone')}
        />
        {zones.length > 0 && (
          <datalist id={`${prefix}-timezones`}>
            {zones.map((z) => (
              <option key={z} value={z} />
            ))}
          </datalist>
        )}
        {message('timezone')}
      </div>
      <p class="muted">
        {cron ? (
          <>
            Runs as <code>{cron}</code> in {f.timezone.trim() || 'UTC'}; scheduled runs use the published
            version.
          </>
        ) : (
          'Choose when it runs.'
        )}
      </p>
    </fieldset>
  );
}
