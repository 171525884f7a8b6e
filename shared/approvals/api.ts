import * as z from 'zod';
import { DbTypeSchema, QueryResult } from '../connections/schemas';
import { endpoint, once } from '../http/endpoint';
import { Deleted, IdParams, PageQuery } from '../http/schemas';

export const MAX_NOTE_CHARS = 2000;
export const MAX_CONTEXT_CHARS = 2000;
export const MAX_APPROVERS = 50;

const Id = z.string().min(1).max(200);

export const QuerySubmitRequest = z.object({
  connectionId: Id,
  query: z
    .string()
    .min(1)
    .max(100_000)
    .describe('One SQL statement, or for MONGODB a JSON query (reads only)'),
  context: z.string().max(MAX_CONTEXT_CHARS).optional().describe('Why the query is needed'),
});
export const ApproveRejectRequest = z.object({
  note: z.string().max(MAX_NOTE_CHARS).optional(),
});

export const ApprovalQueryResult = once(() =>
  QueryResult().extend({
    rowsAffected: z.number().int().optional().describe('Rows a write changed'),
  }),
);

export const PendingQuery = once(() =>
  z.object({
    id: z.string(),
    connectionId: z.string(),
    connectionName: z.string().nullable(),
    connectionType: DbTypeSchema.nullable(),
    apiKeyId: z.string().nullable(),
    query: z.string(),
    context: z.string().nullable(),
    status: z.enum(['PENDING', 'APPROVED', 'REJECTED', 'EXPIRED']),
    statementKind: z.enum(['read', 'write']).describe('What the parser found at submission (extension)'),
    statementType: z.string().describe('The statement kind, e.g. SELECT, UPDATE (extension)'),
    submittedBy: z.string().describe('User id of the submitter (extension)'),
    reviewedBy: z.string().nullable().describe('User id of the reviewer, or "auto" (extension)'),
    reviewedAt: z.string().nullable(),
    reviewNote: z.string().nullable(),
    result: ApprovalQueryResult().optional().describe('Present only after a successful approval'),
    error: z
      .object({ code: z.string(), message: z.string(), details: z.unknown().optional() })
      .nullable()
      .describe('Why the approved statement failed (extension)'),
    expiresAt: z.string(),
    createdAt: z.string(),
  }),
);
export const ApprovalResult = once(() =>
  z.object({
    id: z.string(),
    status: z.enum(['APPROVED', 'REJECTED']),
    reviewedBy: z.string(),
    reviewNote: z.string().nullable(),
    result: ApprovalQueryResult().nullable(),
  }),
);

export const RuleScope = z.enum(['all', 'write']);
const Approvers = z
  .array(Id)
  .min(1)
  .max(MAX_APPROVERS)
  .describe('User ids of active users of the organization');
export const ApprovalRuleCreate = z.object({
  approvers: Approvers,
  connectionId: Id.nullable().optional(),
  scope: RuleScope.default('all'),
});
export const ApprovalRuleUpdate = z.object({
  connectionId: Id.nullable().optional(),
  scope: RuleScope.optional(),
  approvers: Approvers.optional(),
  isActive: z.boolean().optional(),
});
export const ApprovalRule = once(() =>
  z.object({
    id: z.string(),
    orgId: z.string(),
    connectionId: z.string().nullable(),
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
  getQueryStatus,
  approveQuery,
  rejectQuery,
  listRules,
  createRule,
  getRule,
  updateRule,
  deleteRule,
];
