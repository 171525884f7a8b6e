import type { EmailActionConfig, WebhookActionConfig } from './config';

export type ActionType = 'EMAIL' | 'WEBHOOK';
/** A parsed configuration with its defaults applied. */
export type ActionConfig = WebhookActionConfig | EmailActionConfig;

export interface StepOutput {
  name: string;
  columns: string[];
  rows: Record<string, unknown>[];
  rowCount: number;
}

/** = WorkflowActionAttempt of the interface. */
export interface ActionAttempt {
  id: string;
  runId: string;
  actionId: string | null;
  actionOrder: number;
  attempt: number;
  status: 'RUNNING' | 'SUCCESS' | 'FAILED';
  method: string;
  url: string;
  requestBodyBytes: number;
  statusCode: number | null;
  durationMs: number | null;
  responseHeaders: string | null;
  responseBody: string | null;
  error: string | null;
  startedAt: string;
  completedAt: string | null;
}

export interface DeliverInput {
  orgId: string;
  /** The user the run acts for (the caller; the publisher for scheduled runs): a credential is sent only if they may use it. */
  userId: string;
  runId: string;
  workflow: { id: string; name: string };
  scheduledFor: string | null;
  /** Index 0 is query_1 (the step's 1-based position). */
  steps: StepOutput[];
  action: { id: string | null; order: number; type: ActionType; config: ActionConfig };
  /** Epoch ms: no attempt or retry wait goes past it. */
  deadline: number;
  /** Called at attempt start (RUNNING) and at its end (SUCCESS or FAILED) with the same id. */
  onAttempt(a: ActionAttempt): Promise<void>;
}

export interface DeliverOutcome {
  success: boolean;
  critical: boolean;
  attempts: ActionAttempt[];
  /** Goes into the run's actionResults (bounded, no secrets). */
  summary: Record<string, unknown>;
  error: string | null;
}
