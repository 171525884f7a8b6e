import type { EndpointSpec } from './endpoint';

/**
 * What the OpenAPI document says beyond the endpoint specs: every error code with the status it comes
 * with and when, the codes each operation can answer, tag descriptions and the names of the resources'
 * schemas. Loaded only with the document (functions/http/discovery.ts imports openapi.ts lazily).
 */

export const ERROR_CODES: Record<string, { status: number; when: string }> = {
  VALIDATION_ERROR: {
    status: 400,
    when: 'A path, query or body field is invalid; `details.issues[].path` names each field (e.g. `body.name`).',
  },
  BAD_REQUEST: {
    status: 400,
    when: 'The body is not valid JSON, or the change would break an invariant the message names (e.g. the last admin).',
  },
  READ_ONLY_VIOLATION: {
    status: 400,
    when: 'The statement is not exactly one read the guard can verify (`details.statementType`: MULTIPLE_STATEMENTS, UNPARSEABLE, FUNCTION with `details.function`, …), or a write on a read-only connection.',
  },
  UNAUTHORIZED: { status: 401, when: 'The API key is missing, unknown, revoked or expired.' },
  CREDITS_EXHAUSTED: {
    status: 402,
    when: "The caller's AI balance is at or below zero; no model call was made.",
  },
  FORBIDDEN: {
    status: 403,
    when: 'The key lacks the scope, the user is not an admin where one is needed, or is not allowed this action on this resource (e.g. not its creator, or approving their own submission).',
  },
  NOT_FOUND: {
    status: 404,
    when: 'The resource does not exist, belongs to another organization, or is not visible to this member; `details.path` names a referenced id that is the cause.',
  },
  METHOD_NOT_ALLOWED: {
    status: 405,
    when: 'The path exists but not with this method (`Allow` lists the methods).',
  },
  ALREADY_EXISTS: {
    status: 409,
    when: 'The name (or email) is already used in the organization (case and surrounding spaces ignored).',
  },
  CONFLICT: {
    status: 409,
    when: 'Another change landed on the resource since it was read; read it again and retry.',
  },
  INVALID_STATE: { status: 409, when: 'The query is no longer PENDING, or has expired (`details.status`).' },
  IN_USE: {
    status: 409,
    when: 'A workflow draft or an active published version still references the credential.',
  },
  LIMIT_EXCEEDED: {
    status: 409,
    when: 'The organization already has the maximum number of these resources.',
  },
  DRAFT_REVISION_CONFLICT: {
    status: 409,
    when: 'The draft changed since the revision given in `expectedDraftRevision` (`details.currentDraftRevision`).',
  },
  SCHEMA_NOT_INTROSPECTED: {
    status: 412,
    when: 'The connection has no cached schema yet: test the connection or refresh its schema first.',
  },
  PAYLOAD_TOO_LARGE: { status: 413, when: 'The body exceeds 1 MiB.' },
  QUERY_FAILED: {
    status: 422,
    when: "The database refused the statement (`details` carries the database's code and message).",
  },
  CONNECTION_FAILED: {
    status: 422,
    when: 'The database could not be reached or refused the login; the diagnosis names the step and the fix.',
  },
  CONNECTION_INACTIVE: {
    status: 422,
    when: 'The connection is switched off (`isActive: false`); a successful test reactivates it.',
  },
  INTROSPECTION_FAILED: { status: 422, when: 'The schema could not be read from the database.' },
  WARNINGS_NOT_ACKNOWLEDGED: {
    status: 422,
    when: 'Publishing has warnings: resend with every string of `details.warnings` in `acknowledgedWarnings`.',
  },
  PREVIEW_FAILED: { status: 422, when: 'A step cannot run (`details.step`, `connectionId`, `reason`).' },
  ACTION_TEST_FAILED: { status: 422, when: 'A step or the delivery failed; the run is in `details.run`.' },
  PRECONDITION_REQUIRED: { status: 428, when: 'A change to the draft needs `expectedDraftRevision`.' },
  CONFIRMATION_REQUIRED: {
    status: 428,
    when: 'The action is sent for real: pass `{"confirmDelivery": true}`.',
  },
  RATE_LIMITED: {
    status: 429,
    when: 'The per-organization (or AI, or per-IP discovery) limit for this minute is spent; `Retry-After` says when to retry.',
  },
  INTERNAL_ERROR: { status: 500, when: 'An unexpected error; `meta.requestId` identifies it in the logs.' },
  AI_PROVIDER_ERROR: { status: 502, when: 'The model provider answered with an error.' },
  AI_NOT_CONFIGURED: {
    status: 503,
    when: 'No model provider is configured; the message says how to set one.',
  },
  AI_PROVIDER_BUSY: { status: 503, when: 'The model provider is rate limiting or overloaded; retry later.' },
  AI_PROVIDER_TIMEOUT: { status: 504, when: 'The model provider did not answer in time.' },
  QUERY_TIMEOUT: { status: 504, when: 'The statement ran past its timeout (25 s) and was cancelled.' },
};

const RUN = { 422: ['QUERY_FAILED', 'CONNECTION_FAILED', 'CONNECTION_INACTIVE'], 504: ['QUERY_TIMEOUT'] };
const SAVE_SQL = { 400: ['READ_ONLY_VIOLATION'], 404: ['NOT_FOUND'] };

/** Codes an operation can answer beyond those every operation of its kind can (see `errorCodes`). */
export const OPERATION_ERRORS: Record<string, Record<number, string[]>> = {
  'DELETE /keys/{id}': { 400: ['BAD_REQUEST'] },
  'POST /members': { 409: ['ALREADY_EXISTS'] },
  'PATCH /members/{id}': { 400: ['BAD_REQUEST'] },
  'DELETE /members/{id}': { 400: ['BAD_REQUEST'] },
  'GET /usage': { 404: ['NOT_FOUND'] },
  'GET /usage/budget': { 404: ['NOT_FOUND'] },
  'POST /chat': {
    402: ['CREDITS_EXHAUSTED'],
    404: ['NOT_FOUND'],
    502: ['AI_PROVIDER_ERROR'],
    503: ['AI_NOT_CONFIGURED', 'AI_PROVIDER_BUSY'],
    504: ['AI_PROVIDER_TIMEOUT'],
  },
  'POST /conversations': { 404: ['NOT_FOUND'] },
  'POST /connections/{id}/test': { 422: ['CONNECTION_FAILED', 'INTROSPECTION_FAILED'] },
  'GET /connections/{id}/read-safety': {
    422: ['CONNECTION_FAILED', 'CONNECTION_INACTIVE', 'QUERY_FAILED'],
    504: ['QUERY_TIMEOUT'],
  },
  'POST /connections/{id}/schema': {
    422: ['CONNECTION_FAILED', 'CONNECTION_INACTIVE', 'INTROSPECTION_FAILED'],
  },
  'POST /connections/{id}/query': { 400: ['READ_ONLY_VIOLATION'], ...RUN },
  'POST /connections/{id}/annotations/auto': { 412: ['SCHEMA_NOT_INTROSPECTED'] },
  'POST /dashboards/{id}/widgets': SAVE_SQL,
  'PATCH /dashboards/{id}/widgets/{widgetId}': SAVE_SQL,
  'GET /dashboards/{id}/widgets/{widgetId}/data': { 400: ['READ_ONLY_VIOLATION'], ...RUN },
  'POST /saved-queries': { ...SAVE_SQL, 409: ['ALREADY_EXISTS'] },
  'PATCH /saved-queries/{id}': { ...SAVE_SQL, 409: ['ALREADY_EXISTS', 'CONFLICT'] },
  'POST /saved-queries/{id}/run': { 400: ['READ_ONLY_VIOLATION'], ...RUN },
  'POST /metrics': { ...SAVE_SQL, 409: ['ALREADY_EXISTS'] },
  'PATCH /metrics/{id}': { ...SAVE_SQL, 409: ['ALREADY_EXISTS', 'CONFLICT'] },
  'GET /metrics/{id}/value': { 400: ['READ_ONLY_VIOLATION'], ...RUN },
  'POST /queries/submit': { ...SAVE_SQL, 422: ['CONNECTION_INACTIVE'] },
  'POST /queries/{id}/approve': {
    400: ['BAD_REQUEST', 'READ_ONLY_VIOLATION'],
    409: ['INVALID_STATE'],
    ...RUN,
  },
  'POST /queries/{id}/reject': { 409: ['INVALID_STATE'] },
  'POST /approval-rules': { 404: ['NOT_FOUND'] },
  'PATCH /approval-rules/{id}': { 404: ['NOT_FOUND'] },
  'POST /workflows': SAVE_SQL,
  'PATCH /workflows/{id}': {
    400: ['READ_ONLY_VIOLATION'],
    409: ['DRAFT_REVISION_CONFLICT'],
    422: ['WARNINGS_NOT_ACKNOWLEDGED'],
    428: ['PRECONDITION_REQUIRED'],
  },
  'POST /workflows/{id}/preview': { 422: ['PREVIEW_FAILED'] },
  'POST /workflows/{id}/actions/{order}/test': {
    422: ['ACTION_TEST_FAILED'],
    428: ['CONFIRMATION_REQUIRED'],
  },
  'POST /workflow-credentials': { 409: ['ALREADY_EXISTS'] },
  'PATCH /workflow-credentials/{id}': { 409: ['ALREADY_EXISTS', 'CONFLICT'] },
  'DELETE /workflow-credentials/{id}': { 409: ['IN_USE'] },
  'POST /webhooks': { 409: ['LIMIT_EXCEEDED'] },
  'PATCH /webhooks/{id}': { 409: ['CONFLICT'] },
};

export const operationKey = (spec: Pick<EndpointSpec, 'method' | 'path'>) => `${spec.method} ${spec.path}`;

/** Every error status of an operation with the codes it can carry, sorted by status. */
export function errorCodes(spec: EndpointSpec): Map<number, string[]> {
  const out = new Map<number, Set<string>>();
  const add = (status: number, ...codes: string[]) => {
    const set = out.get(status) ?? new Set<string>();
    for (const c of codes) set.add(c);
    out.set(status, set);
  };
  if (spec.params || spec.query || spec.body) add(400, 'VALIDATION_ERROR');
  if (spec.body) {
    add(400, 'BAD_REQUEST');
    add(413, 'PAYLOAD_TOO_LARGE');
  }
  if (spec.auth !== 'none') {
    add(401, 'UNAUTHORIZED');
    add(403, 'FORBIDDEN');
  }
  if (spec.params) add(404, 'NOT_FOUND');
  add(429, 'RATE_LIMITED');
  add(500, 'INTERNAL_ERROR');
  for (const [status, codes] of Object.entries(OPERATION_ERRORS[operationKey(spec)] ?? {}))
    add(Number(status), ...codes);
  return new Map([...out].sort(([a], [b]) => a - b).map(([s, c]) => [s, [...c].sort()]));
}

/** What an operation does beyond its summary, for the operations where that is not obvious. */
export const OPERATION_DESCRIPTIONS: Record<string, string> = {
  'POST /keys':
    'Creates a key for the calling user with a subset of the scopes the calling key holds. The full key is in this answer only; only its SHA-256 is stored.',
  'DELETE /keys/{id}':
    "Revokes the key at once, also on warm instances. The organization's last admin key cannot revoke itself.",
  'DELETE /members/{id}':
    'Removes the member and revokes its keys. The organization keeps at least one admin.',
  'POST /chat':
    'The model writes a query in the connection\'s dialect; it runs on the read-only path (at most 3 repairs after a failure), and the answer is written from its rows. `sqlQuery` and `queryResult` are those of the last query that succeeded. With `"stream": true` the answer is server-sent events (`sql`, `result`, `step`, `delta`, `done`, `error`). Errors before the stream starts are ordinary answers.',
  'POST /connections':
    "Validation depends on `type`: SQLite takes a file in the organization's folder (or an S3 object when deployed); the others need `host` and `database`, and a `username` except MongoDB. The password is encrypted with the organization and connection as context and never returned. `readOnly` (default true): only approved queries may write, and only where it is false.",
  'POST /connections/{id}/test':
    'Connects, and on success reads and caches the schema (`schemaIntrospected`) and reactivates the connection. A failure is still 200 with `success: false` and a diagnosis naming the step, host, port, database and user.',
  'POST /connections/{id}/query':
    "Runs one read: the statement must be one read on the database's own grammar, with every function allowed; it runs in a read-only transaction under a 25 s timeout, at most `maxRows` rows (1,000 by default, up to 10,000) and 5 MiB (`truncated`). Every attempt is in the query history.",
  'GET /connections/{id}/queries':
    'Every execution on the connection, newest first, each with its `source` (ad hoc `query`, `widget`, `saved_query`, `metric`, `chat`, `approval`, `workflow`, `mcp`) and its `author` (the user whose key ran it: id, name and email). Admins see every entry; other users only the entries they ran. `source` filters (comma-separated, e.g. `query` for ad-hoc queries apart from widget loads); `total` counts what the caller may see.',
  'GET /connections/{id}/read-safety':
    "PostgreSQL: the escape inventory of the connection's role, found now with one catalog query (JIT off): every way it can change something a read-only transaction does not contain (another session through dblink or postgres_fdw, files, programs, a superuser, an unreviewed C extension, an untrusted language, a SECURITY DEFINER function whose owner reaches one), each with the REVOKE statements that close it. With none, reads run in open mode on PostgreSQL's guarantees alone; with any, in strict mode (every read also checked against the catalog). Other databases answer `not-applicable`.",
  'GET /connections/{id}/schema':
    'The cached schema; 404 before the first introspection (test the connection or refresh the schema).',
  'POST /connections/{id}/annotations/auto':
    'Queues automatic annotation of the given tables (all when omitted): sampled example values and, with a model, descriptions. Never overwrites an annotation a person wrote.',
  'GET /dashboards/{id}/widgets/{widgetId}/data':
    "Runs the widget's query, or answers the cached result (`cached`, `cachedAt`) within `config.cacheSeconds` (default 60). `refresh=true` (an extension) skips the cache: the query runs now and its result replaces the cached one.",
  'POST /saved-queries/{id}/run':
    "`params` are bound as driver parameters for the `{{name}}` placeholders, checked against each parameter's type; a missing optional value takes its default, else NULL.",
  'GET /metrics/{id}/value':
    "Runs the formula on the metric's connection: the value is the first column of the first row.",
  'POST /queries/submit':
    'Classifies the statement with the guard\'s parsers (one statement only). A read where every matching rule has scope `write` runs at once (`reviewedBy: "auto"`); otherwise it waits for review until it expires (24 h by default).',
  'GET /queries':
    'The approval history (an extension): every status, newest first by `createdAt`; `status` filters (comma-separated, e.g. `APPROVED,REJECTED`; a PENDING query past its `expiresAt` counts as EXPIRED). Items are PendingQuery objects without `result` (read it with GET /queries/{id}/status). Admins see every query of the organization; other users their own submissions and the queries they may review under the active rules.',
  'POST /queries/{id}/approve':
    "Only for a PENDING query that has not expired, and never by its submitter. The statement is classified again against the connection as it is now, then runs once: a write in one transaction committed only when it succeeded. The answer carries the stored result or the execution's error.",
  'POST /queries/{id}/reject': 'Only for a PENDING query that has not expired, and never by its submitter.',
  'PATCH /workflows/{id}':
    'A change to the draft needs `expectedDraftRevision` (the revision you read). `isActive: true` publishes the draft as a new version after checking it: errors are 400, warnings 422 until each is echoed in `acknowledgedWarnings`. `isActive: false` removes the schedule and keeps the version.',
  'POST /workflows/{id}/run':
    'Runs the current draft now, as it is: published or not, unpublished changes included. **Its delivery actions are sent for real** (webhooks are called, email is sent), exactly as a scheduled run would send them; the run (trigger `MANUAL`) is in the history with its attempts. It publishes nothing and does not touch the schedule. To see what the steps return without sending anything, use POST /workflows/{id}/preview; to send one action once, POST /workflows/{id}/actions/{order}/test. Answers the finished run, or the run still RUNNING after LOUPE_MANUAL_RUN_WAIT_MS (20 s).',
  'POST /workflows/{id}/preview':
    'Runs every draft step with at most 100 rows each; sends nothing, creates no run.',
  'POST /workflows/{id}/actions/{order}/test':
    "Runs the draft's steps and sends the action at that order for real (`stopIfEmpty` does not stop it); the run is in the history.",
  'PATCH /workflow-credentials/{id}':
    'Rotates: `config` replaces the secret (validated for `kind`, which may change in the same request). Running workflows use the new secret from their next request.',
  'POST /webhooks':
    'The answer holds the full signing secret (`whsec_…`) once; later reads show its last 4 characters. The URL must be https on port 443 at a public address (locally, see LOUPE_DEV_ALLOW_LOOPBACK_HTTP).',
  'PATCH /webhooks/{id}':
    '`rotateSecret: true` answers the new secret once; for 24 h deliveries carry both signatures so receivers can switch.',
  'POST /webhooks/{id}/test':
    'Sends a signed `webhook.test` event to this endpoint only, in one attempt, and logs it.',
};

export const TAG_DESCRIPTIONS: Record<string, string> = {
  Discovery: 'What the API offers, without a key: links, the OpenAPI document, the OAuth resource metadata.',
  Keys: 'API keys of the calling user (admins): create one with a subset of your scopes, list, revoke.',
  Members: 'The users of the organization (admins): roles, assigned connections, keys made for them.',
  Usage: 'AI usage records and the balance they are charged to.',
  Chat: 'Questions in plain language answered with generated SQL and its result; conversations keep the context.',
  Connections:
    'Databases (PostgreSQL, MySQL, MariaDB, SQL Server, MongoDB, SQLite): tests with diagnosis, schemas, annotations, read-only queries and their history.',
  Dashboards: 'Dashboards of widgets, each a query with a chart type and a cached result.',
  'Saved queries': 'Named queries with typed `{{name}}` parameters, run on demand.',
  Metrics: 'Named formulas whose value is the first column of the first row.',
  'Query approval':
    'The only way a write runs: a submitted statement waits for an approver other than its author; rules say who reviews.',
  Workflows:
    'Read-only query steps and webhook or email actions, run by hand or on a schedule; drafts, publishing, runs.',
  'Workflow credentials': 'Secrets that webhook actions send to named hosts only (admins); never returned.',
  'Event webhooks':
    "Endpoints that receive the service's events, signed per Standard Webhooks, with a delivery log.",
};

/**
 * Named components for the resources: the `data` schema (or a list's item) of these operations. Every
 * identical schema elsewhere in the document becomes a reference to it.
 */
export const RESOURCE_SCHEMAS: Record<string, string> = {
  'GET /keys': 'ApiKey',
  'POST /keys': 'ApiKeyCreated',
  'GET /members/{id}': 'Member',
  'GET /usage/budget': 'UsageBudget',
  'POST /chat': 'ChatResponse',
  'GET /conversations/{id}': 'ConversationWithMessages',
  'POST /conversations': 'Conversation',
  'GET /conversations/{id}/messages': 'Message',
  'GET /connections/{id}': 'Connection',
  'POST /connections/{id}/test': 'ConnectionTestResult',
  'GET /connections/{id}/read-safety': 'ReadSafety',
  'GET /connections/{id}/schema': 'CachedSchema',
  'POST /connections/{id}/query': 'QueryResult',
  'GET /connections/{id}/queries': 'QueryHistoryEntry',
  'GET /connections/{id}/annotations/{annotationId}': 'Annotation',
  'GET /dashboards/{id}': 'Dashboard',
  'POST /dashboards/{id}/widgets': 'Widget',
  'GET /dashboards/{id}/widgets/{widgetId}/data': 'WidgetData',
  'GET /saved-queries/{id}': 'SavedQuery',
  'GET /metrics/{id}': 'Metric',
  'GET /metrics/{id}/value': 'MetricValue',
  'GET /queries/{id}/status': 'PendingQuery',
  'GET /queries': 'PendingQueryListItem',
  'GET /approval-rules/{id}': 'ApprovalRule',
  'GET /workflows/{id}': 'Workflow',
  'GET /workflows/{id}/runs': 'WorkflowRun',
  'POST /workflows/{id}/preview': 'WorkflowPreview',
  'GET /workflow-credentials/{id}': 'WorkflowCredential',
  'GET /webhooks/{id}': 'WebhookEndpoint',
  'GET /webhooks/{id}/deliveries': 'WebhookDelivery',
  'POST /webhooks/{id}/test': 'WebhookTestResult',
};
