import * as chatApi from '../../shared/chat/api';
import * as api from '../../shared/conversations/api';
import {
  createConversation,
  deleteConversation,
  getConversation,
  listConversations,
  listMessages,
  renameConversation,
} from '../../shared/conversations/conversations';
import { on } from '../../shared/http/route';
import { streamingHttpHandler } from '../../shared/http/stream';
import { lazy } from '../../shared/platform/lazy';

const chatModule = lazy(() => import('../../shared/chat/chat'));

/**
 * POST /chat (streams when asked) and the conversations. A streaming group: see shared/http/stream.ts.
 * The chat itself (model client, schema retrieval, SQL guard, drivers) loads with the first chat
 * request, a lazy chunk: a cold start that lists conversations does not compile it.
 */
export const handler = streamingHttpHandler([
  on(chatApi.chat, async ({ ctx, body }) => (await chatModule()).chat(ctx, body)),
  on(api.listConversations, async ({ ctx, query }) => listConversations(ctx, query)),
  on(api.createConversation, async ({ ctx, body }) => ({
    status: 201,
    data: await createConversation(ctx, body),
  })),
  on(api.getConversation, async ({ ctx, params }) => ({ data: await getConversation(ctx, params.id) })),
  on(api.updateConversation, async ({ ctx, params, body }) => ({
    data: await renameConversation(ctx, params.id, body),
  })),
  on(api.deleteConversation, async ({ ctx, params }) => ({ data: await deleteConversation(ctx, params.id) })),
  on(api.listMessages, async ({ ctx, params, query }) => listMessages(ctx, params.id, query)),
]);
