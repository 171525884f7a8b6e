import { httpHandler } from '../../shared/http/handler';
import { on } from '../../shared/http/route';
import * as api from '../../shared/saved-queries/api';
import {
  createSavedQuery,
  deleteSavedQuery,
  getSavedQuery,
  listSavedQueries,
  runSavedQuery,
  updateSavedQuery,
} from '../../shared/saved-queries/saved-queries';

export const handler = httpHandler([
  on(api.listSavedQueries, async ({ ctx, query }) => listSavedQueries(ctx, query)),
  on(api.createSavedQuery, async ({ ctx, body }) => ({
    status: 201,
    data: await createSavedQuery(ctx, body),
  })),
  on(api.getSavedQuery, async ({ ctx, params }) => ({ data: await getSavedQuery(ctx, params.id) })),
  on(api.updateSavedQuery, async ({ ctx, params, body }) => ({
    data: await updateSavedQuery(ctx, params.id, body),
  })),
  on(api.deleteSavedQuery, async ({ ctx, params }) => ({ data: await deleteSavedQuery(ctx, params.id) })),
  on(api.runSavedQuery, async ({ ctx, params, body }) => ({
    data: await runSavedQuery(ctx, params.id, body),
  })),
]);
