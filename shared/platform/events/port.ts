export type EventType =
  | 'connection.health.degraded'
  | 'connection.health.recovered'
  | 'schema.updated'
  | 'workflow.run.completed'
  | 'workflow.run.failed'
  | 'query.approval.requested'
  | 'query.approved'
  | 'query.rejected'
  | 'query.expired'
  | 'webhook.test';

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
