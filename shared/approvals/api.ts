import * as z from 'zod/mini';
import { DbTypeSchema, QueryResult } from '../connections/schemas';
import { endpoint, once } from '../http/endpoint';
import { Deleted, describe, IdParams, PageQuery } from '../http/schemas';

export const MAX_NOTE_CHARS = 2000;
export const MAX_CONTEXT_CHARS = 2000;
export const MAX_APPROVERS = 50;

export const QUERY_STATUSES = ['PENDING', 'APPROVED', 'REJECTED', 'EXPIRED'] as const;
export type QueryStatus = (typeof QUERY_STATUSES)[number];

const Id = z.string().check(z.minLength(1), z.maxLength(200));

export const QuerySubmitRequest = z.object({
  connectionId: Id,
  query: describe(
    z.string().check(z.minLength(1), z.maxLength(100_000)),
    'One SQL statement, or for MONGODB a JSON query (reads only)',
  ),
  context: describe(z.optional(z.string().check(z.maxLength(MAX_CONTEXT_CHARS))), 'Why the query is needed'),
});
export const ApproveRejectRequest = z.object({
  note: z.optional(z.string().check(z.maxLength(MAX_NOTE_CHARS))),
});

export const ApprovalQueryResult = once(() =>
  z.extend(QueryResult(), {
    rowsAffected: describe(z.optional(z.number().check(z.int())), 'Rows a write changed'),
  }),
);

export const PendingQuery = once(() =>
  z.object({
    id: z.string(),
    connectionId: z.string(),
    connectionName: z.nullable(z.string()),
    connectionType: z.nullable(DbTypeSchema),
    apiKeyId: z.nullable(z.string()),
    query: z.string(),
    context: z.nullable(z.string()),
    status: z.enum(QUERY_STATUSES),
    statementKind: describe(z.enum(['read', 'write']), 'What the parser found at submission (extension)'),
    statementType: describe(z.string(), 'The statement kind, e.g. SELECT, UPDATE (extension)'),
    submittedBy: describe(z.string(), 'User id of the submitter (extension)'),
    reviewedBy: describe(z.nullable(z.string()), 'User id of the reviewer, or "auto" (extension)'),
    reviewedAt: z.nullable(z.string()),
    reviewNote: z.nullable(z.string()),
    result: describe(z.optional(ApprovalQueryResult()), 'Present only after a successful approval'),
    error: describe(
      z.nullable(z.object({ code: z.string(), message: z.string(), details: z.optional(z.unknown()) })),
      'Why the approved statement failed (extension)',
    ),
    expiresAt: z.string(),
    createdAt: z.string(),
  }),
);
/** A list item: the PendingQuery without `result` (GET /queries/{id}/status has it). */
export const PendingQueryListItem = once(() => z.omit(PendingQuery(), { result: true }));

const statusList = new RegExp(`^(${QUERY_STATUSES.join('|')})(,(${QUERY_STATUSES.join('|')}))*$`);
export const QueryListQuery = z.extend(PageQuery, {
  status: describe(
    z.optional(
      z.pipe(
        z
          .string()
          .check(
            z.maxLength(200),
            z.regex(
              statusList,
              `status must be one or more of ${QUERY_STATUSES.join(', ')}, comma-separated`,
            ),
          ),
        z.transform((v) => [...new Set(v.split(','))] as QueryStatus[]),
      ),
    ),
    `Only queries with these statuses: one or more of ${QUERY_STATUSES.join(', ')}, comma-separated (e.g. APPROVED,REJECTED). EXPIRED includes a PENDING query past its expiresAt.`,
  ),
});
export type QueryListQuery = z.output<typeof QueryListQuery>;

export const ApprovalResult = once(() =>
  z.object({
    id: z.string(),
    status: z.enum(['APPROVED', 'REJECTED']),
    reviewedBy: z.string(),
    reviewNote: z.nullable(z.string()),
    result: z.nullable(ApprovalQueryResult()),
  }),
);

export const RuleScope = z.enum(['all', 'write']);
const Approvers = describe(
  z.array(Id).check(z.minLength(1), z.maxLength(MAX_APPROVERS)),
  'User ids of active users of the organization',
);
export const ApprovalRuleCreate = z.object({
  approvers: Approvers,
  connectionId: z.optional(z.nullable(Id)),
  scope: z._default(RuleScope, 'all'),
});
export const ApprovalRuleUpdate = z.object({
  connectionId: z.optional(z.nullable(Id)),
  scope: z.optional(RuleScope),
  approvers: z.optional(Approvers),
  isActive: z.optional(z.boolean()),
});
export const ApprovalRule = once(() =>
  z.object({
    id: z.string(),
    orgId: z.string(),
    connectionId: z.nullable(z.string()),
    scope: RuleScope,
    approvers: z.array(z.string()),
    isActive: z.boolean(),
    createdAt: z.string(),
    updatedAt: z.string(),
  }),
);

const tag = 'Query approval';

export const submitQuery = endpoint({
  method: 'POST',
  path: '/queries/submit',
  tag,
  scope: 'query',
  summary: 'Submit a query for approval (a write runs only this way)',
  body: QuerySubmitRequest,
  status: 202,
  response: PendingQuery,
  errors: [404, 422],
});
export const listPendingQueries = endpoint({
  method: 'GET',
  path: '/queries/pending',
  tag,
  scope: 'query',
  summary: 'Queries awaiting approval, oldest first (admins and approvers of an active rule)',
  query: PageQuery,
  response: () => z.array(PendingQuery()),
  paginated: true,
  errors: [403],
});
export const listQueries = endpoint({
  method: 'GET',
  path: '/queries',
  tag,
  scope: 'query',
  summary: 'Submitted queries with their decisions, newest first (history; extension)',
  query: QueryListQuery,
  response: () => z.array(PendingQueryListItem()),
  paginated: true,
});
export const getQueryStatus = endpoint({
  method: 'GET',
  path: '/queries/{id}/status',
  tag,
  scope: 'query',
  summary: 'Approval status of a submitted query (EXPIRED once past expiresAt)',
  params: IdParams,
  response: PendingQuery,
});
export const approveQuery = endpoint({
  method: 'POST',
  path: '/queries/{id}/approve',
  tag,
  scope: 'query',
  summary: 'Approve a pending query: it runs now, in one transaction',
  params: IdParams,
  body: ApproveRejectRequest,
  bodyOptional: true,
  response: ApprovalResult,
  errors: [403, 409, 422, 504],
});
export const rejectQuery = endpoint({
  method: 'POST',
  path: '/queries/{id}/reject',
  tag,
  scope: 'query',
  summary: 'Reject a pending query',
  params: IdParams,
  body: ApproveRejectRequest,
  bodyOptional: true,
  response: ApprovalResult,
  errors: [403, 409],
});

const admin = { scope: 'admin' as const, admin: true };
export const listRules = endpoint({
  method: 'GET',
  path: '/approval-rules',
  tag,
  ...admin,
  summary: 'List approval rules',
  query: PageQuery,
  response: () => z.array(ApprovalRule()),
  paginated: true,
});
export const createRule = endpoint({
  method: 'POST',
  path: '/approval-rules',
  tag,
  ...admin,
  summary: 'Create an approval rule (who approves; scope all, or write: reads are approved automatically)',
  body: ApprovalRuleCreate,
  status: 201,
  response: ApprovalRule,
  errors: [404],
});
export const getRule = endpoint({
  method: 'GET',
  path: '/approval-rules/{id}',
  tag,
  ...admin,
  summary: 'Get an approval rule',
  params: IdParams,
  response: ApprovalRule,
});
export const updateRule = endpoint({
  method: 'PATCH',
  path: '/approval-rules/{id}',
  tag,
  ...admin,
  summary: 'Change an approval rule',
  params: IdParams,
  body: ApprovalRuleUpdate,
  response: ApprovalRule,
});
export const deleteRule = endpoint({
  method: 'DELETE',
  path: '/approval-rules/{id}',
  tag,
  ...admin,
  summary: 'Delete an approval rule',
  params: IdParams,
  response: Deleted,
});

export const approvalEndpoints = [
  submitQuery,
  listPendingQueries,
  listQueries,
  getQueryStatus,
  approveQuery,
  rejectQuery,
  listRules,
  createRule,
  getRule,
  updateRule,
  deleteRule,
];
