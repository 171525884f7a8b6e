import * as api from '../../shared/approvals/api';
import {
  approveQuery,
  createRule,
  deleteRule,
  getRule,
  listPending,
  listQueries,
  listRules,
  queryStatus,
  rejectQuery,
  submitQuery,
  updateRule,
} from '../../shared/approvals/approvals';
import { httpHandler } from '../../shared/http/handler';
import { on } from '../../shared/http/route';

export const handler = httpHandler([
  on(api.submitQuery, async ({ ctx, body }) => ({ status: 202, data: await submitQuery(ctx, body) })),
  on(api.listPendingQueries, async ({ ctx, query }) => listPending(ctx, query)),
  on(api.listQueries, async ({ ctx, query }) => listQueries(ctx, query)),
  on(api.getQueryStatus, async ({ ctx, params }) => ({ data: await queryStatus(ctx, params.id) })),
  on(api.approveQuery, async ({ ctx, params, body }) => ({
    data: await approveQuery(ctx, params.id, body.note),
  })),
  on(api.rejectQuery, async ({ ctx, params, body }) => ({
    data: await rejectQuery(ctx, params.id, body.note),
  })),
  on(api.listRules, async ({ ctx, query }) => listRules(ctx, query)),
  on(api.createRule, async ({ ctx, body }) => ({ status: 201, data: await createRule(ctx, body) })),
  on(api.getRule, async ({ ctx, params }) => ({ data: await getRule(ctx, params.id) })),
  on(api.updateRule, async ({ ctx, params, body }) => ({ data: await updateRule(ctx, params.id, body) })),
  on(api.deleteRule, async ({ ctx, params }) => ({ data: await deleteRule(ctx, params.id) })),
]);
