import * as z from 'zod/mini';
import { endpoint, once } from '../http/endpoint';
import { Deleted, describe, IdParams, PageQuery } from '../http/schemas';

export const MAX_STEPS = 5;
export const MAX_ACTIONS = 10;
export const MAX_QUERY_CHARS = 100_000;

const Id = z.string().check(z.minLength(1), z.maxLength(200));
const Name = z.string().check(z.trim(), z.minLength(1), z.maxLength(200));
const Description = z.string().check(z.maxLength(2000));
const Order = z.number().check(z.int(), z.gte(0), z.lte(1000));

export const WorkflowStepInput = z.object({
  query: describe(
    z.string().check(z.minLength(1), z.maxLength(MAX_QUERY_CHARS)),
    'SQL (or a MongoDB JSON query): one read statement',
  ),
  name: z.optional(z.string().check(z.trim(), z.minLength(1), z.maxLength(200))),
  stopIfEmpty: z._default(z.boolean(), false),
  order: describe(z.optional(Order), 'Run order (unique; default: position in the array)'),
  connectionId: describe(z.optional(z.nullable(Id)), "Overrides the workflow's connection for this step"),
});
export const WorkflowActionInput = z.object({
  type: z.enum(['EMAIL', 'WEBHOOK']),
  config: describe(
    z.union([z.string(), z.record(z.string(), z.unknown())]),
    'A WebhookActionConfig, an email action configuration object, or a JSON-encoded string',
  ),
  order: describe(z.optional(Order), 'Unique; default: position in the array'),
});
const TriggerConfig = describe(
  z.nullable(z.union([z.string(), z.record(z.string(), z.unknown())])),
  'A ScheduleConfig object or a JSON-encoded string; `timezone` (IANA, default UTC) is an extension',
);

export const WorkflowCreate = z.object({
  name: Name,
  description: z.optional(Description),
  connectionId: z.optional(z.nullable(Id)),
  projectId: z.optional(z.nullable(Id)),
  triggerType: z.enum(['MANUAL', 'SCHEDULE']),
  triggerConfig: z.optional(TriggerConfig),
  steps: z.array(WorkflowStepInput).check(z.minLength(1), z.maxLength(MAX_STEPS)),
  actions: z.optional(z.array(WorkflowActionInput).check(z.maxLength(MAX_ACTIONS))),
});
export const WorkflowUpdate = z.object({
  name: z.optional(Name),
  description: z.optional(Description),
  connectionId: z.optional(z.nullable(Id)),
  projectId: z.optional(z.nullable(Id)),
  triggerType: z.optional(z.enum(['MANUAL', 'SCHEDULE'])),
  triggerConfig: z.optional(TriggerConfig),
  steps: z.optional(z.array(WorkflowStepInput).check(z.minLength(1), z.maxLength(MAX_STEPS))),
  actions: z.optional(z.array(WorkflowActionInput).check(z.maxLength(MAX_ACTIONS))),
  expectedDraftRevision: describe(
    z.optional(z.number().check(z.int(), z.gte(1))),
    'Required whenever a draft field, step or action changes',
  ),
  acknowledgedWarnings: z.optional(z.array(z.string().check(z.maxLength(2000))).check(z.maxLength(100))),
  isActive: z.optional(z.boolean()),
});
export type WorkflowCreate = z.output<typeof WorkflowCreate>;
export type WorkflowUpdate = z.output<typeof WorkflowUpdate>;

export const ActionTestBody = z.object({
  confirmDelivery: describe(z.optional(z.boolean()), 'Must be true: the action is sent for real'),
});
export const ActionParams = z.object({
  id: Id,
  order: z.coerce.number().check(z.int(), z.gte(0), z.lte(1000)),
});

const WorkflowStep = z.object({
  id: z.string(),
  name: z.string(),
  query: z.string(),
  stopIfEmpty: z.boolean(),
  order: z.number(),
  connectionId: z.nullable(z.string()),
});
const WorkflowAction = z.object({
  id: z.string(),
  type: z.string(),
  config: describe(z.string(), 'Sanitized JSON'),
  order: z.number(),
});
export const Workflow = once(() =>
  z.object({
    id: z.string(),
    orgId: z.string(),
    name: z.string(),
    description: z.string(),
    connectionId: z.nullable(z.string()),
    projectId: z.nullable(z.string()),
    triggerType: z.string(),
    triggerConfig: z.nullable(z.string()),
    isActive: z.boolean(),
    draftRevision: z.number(),
    publishedVersion: z.nullable(z.number()),
    publishedDraftRevision: z.nullable(z.number()),
    publishedAt: z.nullable(z.string()),
    hasUnpublishedChanges: z.boolean(),
    createdBy: describe(
      z.string(),
      'Extension: the user id of the creator. The creator and admins may change, publish, deactivate or delete the workflow; other members who see it may read, preview and run it',
    ),
    createdAt: z.string(),
    updatedAt: z.string(),
    steps: z.array(WorkflowStep),
    actions: z.array(WorkflowAction),
  }),
);
const Attempt = z.object({
  id: z.string(),
  runId: z.string(),
  actionId: z.nullable(z.string()),
  actionOrder: z.number(),
  attempt: z.number(),
  status: z.string(),
  method: z.string(),
  url: z.string(),
  requestBodyBytes: z.number(),
  statusCode: z.nullable(z.number()),
  durationMs: z.nullable(z.number()),
  responseHeaders: z.nullable(z.string()),
  responseBody: z.nullable(z.string()),
  error: z.nullable(z.string()),
  startedAt: z.string(),
  completedAt: z.nullable(z.string()),
});
export const WorkflowRun = once(() =>
  z.object({
    id: z.string(),
    workflowId: z.string(),
    trigger: z.string(),
    status: z.string(),
    definitionVersion: z.nullable(z.number()),
    draftRevision: describe(z.number(), 'Extension: the draft revision the run executed'),
    scheduledFor: z.nullable(z.string()),
    stepResults: z.nullable(z.string()),
    actionResults: z.nullable(z.string()),
    durationMs: z.nullable(z.number()),
    error: z.nullable(z.string()),
    startedAt: z.string(),
    completedAt: z.nullable(z.string()),
    actionAttempts: z.array(Attempt),
  }),
);
export const WorkflowPreview = once(() =>
  z.object({
    workflowId: z.string(),
    draftRevision: z.nullable(z.number()),
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
        error: z.nullable(z.string()),
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
  summary:
    'Change the draft (expectedDraftRevision), publish (isActive true) or deactivate (its creator and admins only)',
  params: IdParams,
  body: WorkflowUpdate,
  response: Workflow,
  errors: [403, 409, 422, 428],
});
export const deleteWorkflow = endpoint({
  method: 'DELETE',
  path: '/workflows/{id}',
  tag,
  scope,
  summary: 'Delete a workflow with its versions, runs, attempts and schedule (its creator and admins only)',
  params: IdParams,
  response: Deleted,
  errors: [403],
});
export const runWorkflow = endpoint({
  method: 'POST',
  path: '/workflows/{id}/run',
  tag,
  scope,
  summary:
    'Run the current draft now, published or not, sending its actions for real; the run as it stands after at most 20 s: finished, or RUNNING while it goes on',
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
  summary:
    "Run the draft's steps and send the action at that order for real (confirmDelivery: true); RUNNING when still under way after 20 s",
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
