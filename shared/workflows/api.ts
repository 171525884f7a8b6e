import * as z from 'zod';
import { endpoint, once } from '../http/endpoint';
import { Deleted, IdParams, PageQuery } from '../http/schemas';

export const MAX_STEPS = 5;
export const MAX_ACTIONS = 10;
export const MAX_QUERY_CHARS = 100_000;

const Id = z.string().min(1).max(200);
const Name = z.string().trim().min(1).max(200);
const Description = z.string().max(2000);
const Order = z.number().int().min(0).max(1000);

export const WorkflowStepInput = z.object({
  query: z.string().min(1).max(MAX_QUERY_CHARS).describe('SQL (or a MongoDB JSON query): one read statement'),
  name: z.string().trim().min(1).max(200).optional(),
  stopIfEmpty: z.boolean().default(false),
  order: Order.optional().describe('Run order (unique; default: position in the array)'),
  connectionId: Id.nullable().optional().describe("Overrides the workflow's connection for this step"),
});
export const WorkflowActionInput = z.object({
  type: z.enum(['EMAIL', 'WEBHOOK']),
  config: z
    .union([z.string(), z.record(z.string(), z.unknown())])
    .describe('A WebhookActionConfig, an email action configuration object, or a JSON-encoded string'),
  order: Order.optional().describe('Unique; default: position in the array'),
});
const TriggerConfig = z
  .union([z.string(), z.record(z.string(), z.unknown())])
  .nullable()
  .describe(
    'A ScheduleConfig object or a JSON-encoded string; `timezone` (IANA, default UTC) is an extension',
  );

export const WorkflowCreate = z.object({
  name: Name,
  description: Description.optional(),
  connectionId: Id.nullable().optional(),
  projectId: Id.nullable().optional(),
  triggerType: z.enum(['MANUAL', 'SCHEDULE']),
  triggerConfig: TriggerConfig.optional(),
  steps: z.array(WorkflowStepInput).min(1).max(MAX_STEPS),
  actions: z.array(WorkflowActionInput).max(MAX_ACTIONS).optional(),
});
export const WorkflowUpdate = z.object({
  name: Name.optional(),
  description: Description.optional(),
  connectionId: Id.nullable().optional(),
  projectId: Id.nullable().optional(),
  triggerType: z.enum(['MANUAL', 'SCHEDULE']).optional(),
  triggerConfig: TriggerConfig.optional(),
  steps: z.array(WorkflowStepInput).min(1).max(MAX_STEPS).optional(),
  actions: z.array(WorkflowActionInput).max(MAX_ACTIONS).optional(),
  expectedDraftRevision: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe('Required whenever a draft field, step or action changes'),
  acknowledgedWarnings: z.array(z.string().max(2000)).max(100).optional(),
  isActive: z.boolean().optional(),
});
export type WorkflowCreate = z.output<typeof WorkflowCreate>;
export type WorkflowUpdate = z.output<typeof WorkflowUpdate>;

export const ActionTestBody = z.object({
  confirmDelivery: z.boolean().optional().describe('Must be true: the action is sent for real'),
});
export const ActionParams = z.object({ id: Id, order: z.coerce.number().int().min(0).max(1000) });

const WorkflowStep = z.object({
  id: z.string(),
  name: z.string(),
  query: z.string(),
  stopIfEmpty: z.boolean(),
  order: z.number(),
  connectionId: z.string().nullable(),
});
const WorkflowAction = z.object({
  id: z.string(),
  type: z.string(),
  config: z.string().describe('Sanitized JSON'),
  order: z.number(),
});
export const Workflow = once(() =>
  z.object({
    id: z.string(),
    orgId: z.string(),
    name: z.string(),
    description: z.string(),
    connectionId: z.string().nullable(),
    projectId: z.string().nullable(),
    triggerType: z.string(),
    triggerConfig: z.string().nullable(),
    isActive: z.boolean(),
    draftRevision: z.number(),
    publishedVersion: z.number().nullable(),
    publishedDraftRevision: z.number().nullable(),
    publishedAt: z.string().nullable(),
    hasUnpublishedChanges: z.boolean(),
    createdAt: z.string(),
    updatedAt: z.string(),
    steps: z.array(WorkflowStep),
    actions: z.array(WorkflowAction),
  }),
);
const Attempt = z.object({
  id: z.string(),
  runId: z.string(),
  actionId: z.string().nullable(),
  actionOrder: z.number(),
  attempt: z.number(),
  status: z.string(),
  method: z.string(),
  url: z.string(),
  requestBodyBytes: z.number(),
  statusCode: z.number().nullable(),
  durationMs: z.number().nullable(),
  responseHeaders: z.string().nullable(),
  responseBody: z.string().nullable(),
  error: z.string().nullable(),
  startedAt: z.string(),
  completedAt: z.string().nullable(),
});
export const WorkflowRun = once(() =>
  z.object({
    id: z.string(),
    workflowId: z.string(),
    trigger: z.string(),
    status: z.string(),
    definitionVersion: z.number().nullable(),
    draftRevision: z.number().describe('Extension: the draft revision the run executed'),
    scheduledFor: z.string().nullable(),
    stepResults: z.string().nullable(),
    actionResults: z.string().nullable(),
    durationMs: z.number().nullable(),
    error: z.string().nullable(),
    startedAt: z.string(),
    completedAt: z.string().nullable(),
    actionAttempts: z.array(Attempt),
  }),
);
export const WorkflowPreview = once(() =>
  z.object({
    workflowId: z.string(),
    draftRevision: z.number().nullable(),
    status: z.enum(['READY', 'CONDITION_NOT_MET', 'FAILED']),
    wouldRunActions: z.boolean(),
    actionsConfigured: z.number(),
    rowsLimitedTo: z.number(),
    steps: z.array(
      z.object({
        stepId: z.string(),
        name: z.string(),
        status: z.enum(['SUCCESS', 'FAILED', 'SKIPPED']),
        rowCount: z.number(),
        columns: z.array(z.string()),
        rows: z.array(z.record(z.string(), z.unknown())),
        executionTimeMs: z.number(),
        conditionMet: z.boolean(),
        error: z.string().nullable(),
      }),
    ),
  }),
);

const tag = 'Workflows';
const scope = 'workflows' as const;

export const listWorkflows = endpoint({
  method: 'GET',
  path: '/workflows',
  tag,
  scope,
  summary: 'List workflows',
  query: PageQuery,
  response: () => z.array(Workflow()),
  paginated: true,
});
export const createWorkflow = endpoint({
  method: 'POST',
  path: '/workflows',
  tag,
  scope,
  summary: 'Create a workflow (an inactive draft, never scheduled)',
  body: WorkflowCreate,
  status: 201,
  response: Workflow,
  errors: [404],
});
export const getWorkflow = endpoint({
  method: 'GET',
  path: '/workflows/{id}',
  tag,
  scope,
  summary: 'Get a workflow with its draft steps and actions',
  params: IdParams,
  response: Workflow,
});
export const updateWorkflow = endpoint({
  method: 'PATCH',
  path: '/workflows/{id}',
  tag,
  scope,
  summary: 'Change the draft (expectedDraftRevision), publish (isActive true) or deactivate',
  params: IdParams,
  body: WorkflowUpdate,
  response: Workflow,
  errors: [409, 422, 428],
});
export const deleteWorkflow = endpoint({
  method: 'DELETE',
  path: '/workflows/{id}',
  tag,
  scope,
  summary: 'Delete a workflow with its versions, runs, attempts and schedule',
  params: IdParams,
  response: Deleted,
});
export const runWorkflow = endpoint({
  method: 'POST',
  path: '/workflows/{id}/run',
  tag,
  scope,
  summary: 'Run the current draft now, including its actions (real deliveries)',
  params: IdParams,
  status: 201,
  response: WorkflowRun,
});
export const previewWorkflow = endpoint({
  method: 'POST',
  path: '/workflows/{id}/preview',
  tag,
  scope,
  summary: "Run only the draft's query steps (at most 100 rows each); nothing is delivered or stored",
  params: IdParams,
  response: WorkflowPreview,
  errors: [422],
});
export const testWorkflowAction = endpoint({
  method: 'POST',
  path: '/workflows/{id}/actions/{order}/test',
  tag,
  scope,
  summary: "Run the draft's steps and send the action at that order for real (confirmDelivery: true)",
  params: ActionParams,
  body: ActionTestBody,
  bodyOptional: true,
  status: 201,
  response: WorkflowRun,
  errors: [422, 428],
});
export const listWorkflowRuns = endpoint({
  method: 'GET',
  path: '/workflows/{id}/runs',
  tag,
  scope,
  summary: 'Run history, newest first, each run with its delivery attempts',
  params: IdParams,
  query: PageQuery,
  response: () => z.array(WorkflowRun()),
  paginated: true,
});

export const workflowEndpoints = [
  listWorkflows,
  createWorkflow,
  getWorkflow,
  updateWorkflow,
  deleteWorkflow,
  runWorkflow,
  previewWorkflow,
  testWorkflowAction,
  listWorkflowRuns,
];
