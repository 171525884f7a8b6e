import type * as z from 'zod/mini';
import type { AuthContext } from '../auth/context';
import { pageOf, pagination } from '../http/envelope';
import type { PageQuery } from '../http/schemas';
import { notFound } from '../platform/errors';
import type { ConversationCreate, ConversationUpdate } from './api';
import { type Conversation, conversationStore } from './store';

/** Messages embedded in GET /conversations/{id}. */
export const EMBEDDED_MESSAGES = 100;
const DEFAULT_TITLE = 'New conversation';

/** A title from the first question: its first words, at most 80 characters. */
export function titleFrom(question: string): string {
  const text = question.replace(/\s+/g, ' ').trim();
  if (!text) return DEFAULT_TITLE;
  if (text.length <= 80) return text;
  const cut = text.slice(0, 79);
  const space = cut.lastIndexOf(' ');
  return `${(space > 40 ? cut.slice(0, space) : cut).replace(/[\s,.;:!?-]+$/, '')}…`;
}

/** The caller's own conversation; anyone else's (or a missing one) is 404. */
export async function ownConversation(ctx: AuthContext, id: string) {
  const conv = await conversationStore.get(ctx.orgId, ctx.userId, id);
  if (!conv) throw notFound('Conversation');
  return conv;
}

const view = (c: Conversation): Conversation => ({
  id: c.id,
  orgId: c.orgId,
  userId: c.userId,
  connectionId: c.connectionId,
  title: c.title,
  createdAt: c.createdAt,
  updatedAt: c.updatedAt,
});

export async function createConversation(
  ctx: AuthContext,
  body: z.output<typeof ConversationCreate> | undefined,
) {
  const connectionId = body?.connectionId ?? null;
  // Lazily: the connection layer (drivers, SQL guard) is not needed to list or read conversations.
  if (connectionId) await (await import('../connections/execute')).connectionForUse(ctx, connectionId);
  return conversationStore.create({
    orgId: ctx.orgId,
    userId: ctx.userId,
    title: body?.title ?? DEFAULT_TITLE,
    connectionId,
  });
}

export async function listConversations(ctx: AuthContext, q: PageQuery & { connectionId?: string }) {
  return pageOf(await conversationStore.list(ctx.orgId, ctx.userId, q.connectionId), q);
}

export async function getConversation(ctx: AuthContext, id: string) {
  const conv = await ownConversation(ctx, id);
  const messages = await conversationStore.recentMessages(ctx.orgId, id, EMBEDDED_MESSAGES);
  return { ...view(conv), messageCount: conv.messageCount, messages };
}

export async function renameConversation(
  ctx: AuthContext,
  id: string,
  body: z.output<typeof ConversationUpdate>,
) {
  await ownConversation(ctx, id);
  const updated = await conversationStore.update(ctx.orgId, ctx.userId, id, { title: body.title });
  if (!updated) throw notFound('Conversation');
  return updated;
}

export async function deleteConversation(ctx: AuthContext, id: string) {
  const done = await conversationStore.delete(ctx.orgId, ctx.userId, id);
  if (!done) throw notFound('Conversation');
  return { deleted: true as const };
}

/** One page of messages, oldest first: page p holds sequence numbers (p-1)·size+1 … p·size. */
export async function listMessages(ctx: AuthContext, id: string, q: PageQuery) {
  const conv = await ownConversation(ctx, id);
  const lo = (q.page - 1) * q.pageSize + 1;
  const hi = Math.min(conv.messageCount, q.page * q.pageSize);
  const data = await conversationStore.messagesBetween(ctx.orgId, id, lo, hi);
  return { data, pagination: pagination(conv.messageCount, q.page, q.pageSize) };
}
