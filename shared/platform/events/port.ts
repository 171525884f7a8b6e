/** Every service event type (decisions §9), e.g. for validating webhook subscriptions. */
export const EVENT_TYPES = [
  'connection.health.degraded',
  'connection.health.recovered',
  'schema.updated',
  'workflow.run.completed',
  'workflow.run.failed',
  'query.approval.requested',
  'query.approved',
  'query.rejected',
  'query.expired',
  'webhook.test',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

export interface OutboxEvent {
  id: string;
  orgId: string;
  type: EventType;
  createdAt: string;
  data: unknown;
}

/** Records service events durably (delivery to webhook endpoints is a later capability). */
export interface EventOutbox {
  record(orgId: string, type: EventType, data: unknown): Promise<OutboxEvent>;
}
