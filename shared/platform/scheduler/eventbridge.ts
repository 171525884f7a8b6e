import type { CreateScheduleCommandInput, SchedulerClient } from '@aws-sdk/client-scheduler';
import type { Scheduler, ScheduleSpec } from './port';
import { checkSpec } from './spec';

/** The EventBridge Scheduler client library, imported on first use (few requests touch a schedule). */
const schedulerSdk = () => import('@aws-sdk/client-scheduler');

const named = (e: unknown, name: string) => (e as { name?: string })?.name === name;

export interface EventBridgeSettings {
  /** Schedule group (LOUPE_SCHEDULER_GROUP). */
  group: string;
  /** Role EventBridge Scheduler assumes to invoke the worker (LOUPE_SCHEDULER_ROLE_ARN). */
  roleArn: string;
  /** Worker name → Lambda function ARN (LOUPE_WORKER_ARNS). */
  workerArns: Record<string, string>;
}

/**
 * Scheduler port on EventBridge Scheduler: one schedule per spec in the service's group, invoking the
 * worker's Lambda with the payload as Input, no flexible window (and the spec's start date for a
 * rate); at() schedules delete themselves after they run. Upsert updates, and creates when the schedule does not exist yet.
 */
export class EventBridgeScheduler implements Scheduler {
  constructor(
    private readonly settings: EventBridgeSettings,
    private client?: SchedulerClient,
  ) {}

  private async sdk() {
    const sdk = await schedulerSdk();
    this.client ??= new sdk.SchedulerClient({});
    return { sdk, client: this.client };
  }

  async upsert(spec: ScheduleSpec): Promise<void> {
    const { expr, timezone, input, startAt } = checkSpec(spec);
    const arn = this.settings.workerArns[spec.worker];
    if (!arn) throw new Error(`No Lambda ARN for worker "${spec.worker}" in LOUPE_WORKER_ARNS.`);
    const params: CreateScheduleCommandInput = {
      Name: spec.name,
      GroupName: this.settings.group,
      ScheduleExpression: expr.text,
      ScheduleExpressionTimezone: timezone,
      FlexibleTimeWindow: { Mode: 'OFF' },
      // A rate's grid: without a start date, a created or updated rate schedule starts at once.
      ...(startAt !== undefined ? { StartDate: new Date(startAt) } : {}),
      Target: { Arn: arn, RoleArn: this.settings.roleArn, Input: input },
      State: 'ENABLED',
      ActionAfterCompletion: expr.kind === 'at' ? 'DELETE' : 'NONE',
    };
    const { sdk, client } = await this.sdk();
    try {
      await client.send(new sdk.UpdateScheduleCommand(params));
      return;
    } catch (e) {
      if (!named(e, 'ResourceNotFoundException')) throw e;
    }
    try {
      await client.send(new sdk.CreateScheduleCommand(params));
    } catch (e) {
      // Created concurrently by another invocation: make ours the latest definition.
      if (!named(e, 'ConflictException')) throw e;
      await client.send(new sdk.UpdateScheduleCommand(params));
    }
  }

  async remove(name: string): Promise<void> {
    const { sdk, client } = await this.sdk();
    try {
      await client.send(new sdk.DeleteScheduleCommand({ Name: name, GroupName: this.settings.group }));
    } catch (e) {
      if (!named(e, 'ResourceNotFoundException')) throw e;
    }
  }
}
