import { httpHandler } from '../../shared/http/handler';
import { on } from '../../shared/http/route';
import { lazy } from '../../shared/platform/lazy';
import * as api from '../../shared/workflows/api';
import {
  createWorkflow,
  deleteWorkflow,
  getWorkflow,
  listWorkflows,
  updateWorkflow,
} from '../../shared/workflows/workflows';

// Runs, previews and test deliveries (queries, webhooks, email) load with their route's first call, a
// lazy chunk: a cold start compiles the handler stack and the workflows' records only.
const runner = lazy(() => import('../../shared/workflows/runner'));
const manual = lazy(() => import('../../shared/workflows/manual-runs'));

export const handler = httpHandler([
  on(api.listWorkflows, async ({ ctx, query }) => listWorkflows(ctx, query)),
  on(api.createWorkflow, async ({ ctx, body }) => ({ status: 201, data: await createWorkflow(ctx, body) })),
  on(api.getWorkflow, async ({ ctx, params }) => ({ data: await getWorkflow(ctx, params.id) })),
  on(api.updateWorkflow, async ({ ctx, params, body }) => ({
    data: await updateWorkflow(ctx, params.id, body),
  })),
  on(api.deleteWorkflow, async ({ ctx, params }) => ({ data: await deleteWorkflow(ctx, params.id) })),
  on(api.runWorkflow, async ({ ctx, params, remainingMs }) => {
    const m = await manual();
    return { status: 201, data: await m.runDraftNow(ctx, params.id, m.waitBudget(remainingMs)) };
  }),
  on(api.previewWorkflow, async ({ ctx, params }) => ({
    data: await (await runner()).previewWorkflow(ctx, params.id),
  })),
  on(api.testWorkflowAction, async ({ ctx, params, body, remainingMs }) => {
    const m = await manual();
    const wait = m.waitBudget(remainingMs);
    return {
      status: 201,
      data: await m.testAction(ctx, params.id, params.order, body.confirmDelivery, wait),
    };
  }),
  on(api.listWorkflowRuns, async ({ ctx, params, query }) =>
    (await runner()).listRuns(ctx, params.id, query),
  ),
]);
