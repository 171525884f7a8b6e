import {
  ConflictException,
  CreateScheduleCommand,
  DeleteScheduleCommand,
  ResourceNotFoundException,
  SchedulerClient,
  UpdateScheduleCommand,
  ValidationException,
} from '@aws-sdk/client-scheduler';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { resetConfig } from '../../shared/platform/config';
import { resetScheduler, scheduler } from '../../shared/platform/scheduler';
import { EventBridgeScheduler } from '../../shared/platform/scheduler/eventbridge';

const settings = {
  group: 'loupe-schedules',
  roleArn: 'arn:aws:iam::123456789012:role/loupe-scheduler',
  workerArns: { 'workflow-runner': 'arn:aws:lambda:eu-west-1:123456789012:function:loupe-workflow-runner' },
};
const notFound = () =>
  new ResourceNotFoundException({
    message: 'Schedule does not exist',
    Message: 'Schedule does not exist',
    $metadata: {},
  });
const spec = {
  name: 'wf-123',
  expression: 'cron(0 9 ? * MON-FRI *)',
  timezone: 'Europe/Paris',
  worker: 'workflow-runner',
  payload: { workflowId: '123', scheduledFor: '<aws.scheduler.scheduled-time>' },
};
const expected = {
  Name: 'wf-123',
  GroupName: 'loupe-schedules',
  ScheduleExpression: 'cron(0 9 ? * MON-FRI *)',
  ScheduleExpressionTimezone: 'Europe/Paris',
  FlexibleTimeWindow: { Mode: 'OFF' },
  Target: {
    Arn: settings.workerArns['workflow-runner'],
    RoleArn: settings.roleArn,
    Input: '{"workflowId":"123","scheduledFor":"<aws.scheduler.scheduled-time>"}',
  },
  State: 'ENABLED',
  ActionAfterCompletion: 'NONE',
};

describe('EventBridge Scheduler adapter', () => {
  const eb = mockClient(SchedulerClient);
  const make = () => new EventBridgeScheduler(settings, new SchedulerClient({ region: 'eu-west-1' }));
  beforeEach(() => eb.reset());

  it('updates an existing schedule in the group with the worker target, role, input and time zone', async () => {
    eb.on(UpdateScheduleCommand).resolves({ ScheduleArn: 'arn' });
    await make().upsert(spec);
    expect(eb.commandCalls(UpdateScheduleCommand).map((c) => c.args[0].input)).toEqual([expected]);
    expect(eb.commandCalls(CreateScheduleCommand)).toHaveLength(0);
  });

  it('creates the schedule when it does not exist yet', async () => {
    eb.on(UpdateScheduleCommand).rejects(notFound());
    eb.on(CreateScheduleCommand).resolves({ ScheduleArn: 'arn' });
    await make().upsert(spec);
    expect(eb.commandCalls(CreateScheduleCommand).map((c) => c.args[0].input)).toEqual([expected]);
  });

  it('updates again when a concurrent create won the race', async () => {
    eb.on(UpdateScheduleCommand).rejectsOnce(notFound()).resolves({ ScheduleArn: 'arn' });
    eb.on(CreateScheduleCommand).rejects(
      new ConflictException({ message: 'exists', Message: 'exists', $metadata: {} }),
    );
    await make().upsert(spec);
    expect(eb.commandCalls(UpdateScheduleCommand)).toHaveLength(2);
    expect(eb.commandCalls(UpdateScheduleCommand)[1].args[0].input).toEqual(expected);
  });

  it('passes other service errors on', async () => {
    eb.on(UpdateScheduleCommand).rejects(
      new ValidationException({ message: 'bad role', Message: 'bad role', $metadata: {} }),
    );
    await expect(make().upsert(spec)).rejects.toThrow('bad role');
    expect(eb.commandCalls(CreateScheduleCommand)).toHaveLength(0);
  });

  it('makes a one-time at() schedule delete itself after it runs, in UTC by default', async () => {
    eb.on(UpdateScheduleCommand).resolves({ ScheduleArn: 'arn' });
    await make().upsert({
      name: 'once-1',
      expression: 'at(2026-06-01T09:00:00)',
      worker: 'workflow-runner',
      payload: {},
    });
    expect(eb.commandCalls(UpdateScheduleCommand)[0].args[0].input).toMatchObject({
      ScheduleExpression: 'at(2026-06-01T09:00:00)',
      ScheduleExpressionTimezone: 'UTC',
      ActionAfterCompletion: 'DELETE',
      Target: { Input: '{}' },
    });
  });

  it("gives a rate its start date (the grid's first point), and a cron none", async () => {
    eb.on(UpdateScheduleCommand).resolves({ ScheduleArn: 'arn' });
    const startAt = new Date('2026-06-01T09:01:00Z');
    await make().upsert({ ...spec, expression: 'rate(15 minutes)', startAt });
    await make().upsert({ ...spec, startAt });
    const [rate, cron] = eb.commandCalls(UpdateScheduleCommand).map((c) => c.args[0].input);
    expect(rate).toMatchObject({ ScheduleExpression: 'rate(15 minutes)', StartDate: startAt });
    expect(cron).toEqual(expected);
    await expect(
      make().upsert({ ...spec, expression: 'rate(5 minutes)', startAt: new Date('nope') }),
    ).rejects.toMatchObject({
      status: 400,
    });
  });

  it('validates before calling AWS: unknown worker, bad expression, bad time zone, bad name', async () => {
    const s = make();
    await expect(s.upsert({ ...spec, worker: 'ghost' })).rejects.toThrow(/No Lambda ARN for worker "ghost"/);
    await expect(s.upsert({ ...spec, expression: 'cron(0 9 * * * *)' })).rejects.toMatchObject({
      status: 400,
    });
    await expect(s.upsert({ ...spec, timezone: 'Atlantis/Capital' })).rejects.toMatchObject({ status: 400 });
    await expect(s.upsert({ ...spec, name: 'x'.repeat(65) })).rejects.toMatchObject({ status: 400 });
    expect(eb.calls()).toHaveLength(0);
  });

  it('deletes a schedule from the group, and treats an already-deleted one as removed', async () => {
    eb.on(DeleteScheduleCommand).resolvesOnce({}).rejects(notFound());
    await make().remove('wf-123');
    await make().remove('wf-123');
    expect(eb.commandCalls(DeleteScheduleCommand).map((c) => c.args[0].input)).toEqual([
      { Name: 'wf-123', GroupName: 'loupe-schedules' },
      { Name: 'wf-123', GroupName: 'loupe-schedules' },
    ]);
  });

  describe('scheduler() in AWS', () => {
    const KEYS = [
      'LOUPE_RUNTIME',
      'AWS_REGION',
      'LOUPE_SCHEDULER_GROUP',
      'LOUPE_SCHEDULER_ROLE_ARN',
      'LOUPE_WORKER_ARNS',
    ] as const;
    const saved = Object.fromEntries(KEYS.map((k) => [k, process.env[k]]));
    beforeEach(() => {
      process.env.LOUPE_RUNTIME = 'aws';
      process.env.AWS_REGION = 'eu-west-1';
      resetConfig();
      resetScheduler();
    });
    afterEach(() => {
      for (const k of KEYS) {
        if (saved[k] === undefined) delete process.env[k];
        else process.env[k] = saved[k];
      }
      resetConfig();
      resetScheduler();
    });

    it('reads the group, role and worker ARNs from the configuration', async () => {
      process.env.LOUPE_SCHEDULER_GROUP = settings.group;
      process.env.LOUPE_SCHEDULER_ROLE_ARN = settings.roleArn;
      process.env.LOUPE_WORKER_ARNS = JSON.stringify(settings.workerArns);
      resetConfig();
      eb.on(UpdateScheduleCommand).resolves({ ScheduleArn: 'arn' });
      await scheduler().upsert(spec);
      expect(eb.commandCalls(UpdateScheduleCommand)[0].args[0].input).toEqual(expected);
    });

    it('fails fast naming the missing variables', () => {
      expect(() => scheduler()).toThrow(/LOUPE_SCHEDULER_GROUP and LOUPE_SCHEDULER_ROLE_ARN are required/);
    });
  });
});
