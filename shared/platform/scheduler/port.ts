/**
 * Creates and removes schedules at run time (fixed system schedules live in ../workers.ts):
 * EventBridge Scheduler in AWS, a durable local timer otherwise.
 */
export interface ScheduleSpec {
  /** Unique name, e.g. `wf-<workflowId>`. */
  name: string;
  /** `rate(5 minutes)`, `cron(0 9 * * ? *)` or `at(2026-01-01T00:00:00)`. */
  expression: string;
  /** IANA time zone for cron and at expressions; UTC by default. */
  timezone?: string;
  /**
   * Rate expressions only: the first occurrence; the next ones follow every interval after it
   * (EventBridge Scheduler's StartDate). Without it a new rate schedule starts at once. Ignored for
   * cron and at expressions.
   */
  startAt?: Date;
  /** The worker invoked with `payload` as its event. */
  worker: string;
  payload: unknown;
}

export interface Scheduler {
  upsert(spec: ScheduleSpec): Promise<void>;
  remove(name: string): Promise<void>;
}
