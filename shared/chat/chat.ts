import type * as z from 'zod/mini';
import { requireAi } from '../ai/provider';
import type { AuthContext } from '../auth/context';
import { annotationsFor } from '../connections/annotations';
import { listConnections } from '../connections/connections';
import { connectionForUse } from '../connections/execute';
import { cachedSchema } from '../connections/schema';
import { schemaKey } from '../connections/schema-index';
import { usableValues } from '../connections/value-index';
import { ownConversation, titleFrom } from '../conversations/conversations';
import { conversationStore } from '../conversations/store';
import { type StreamSink, sseReply } from '../http/stream';
import { AppError, isAppError, notFound } from '../platform/errors';
import { newId } from '../platform/ids';
import { logger } from '../platform/logger';
import { count } from '../platform/measures';
import { assertCredits } from '../usage/balance';
import type { ChatRequest } from './api';
import { runAssistant } from './assistant';
import { HISTORY_MESSAGES } from './prompt';
import type { ChatResponse } from './response';
import { type ChatEvent, sseEvent } from './sse';

type Body = z.output<typeof ChatRequest>;

/**
 * POST /chat. Everything that can be refused is checked before anything is written or any model call is
 * made, so it is an ordinary envelope error even when streaming: the conversation (404), the connection
 * (404, members only see assigned ones), the provider (503) and the balance (402). Then the question is
 * stored, the assistant answers, and the answer is stored with its SQL, result summary, tokens and model.
 */
export async function chat(ctx: AuthContext, body: Body) {
  const existing = body.conversationId ? await ownConversation(ctx, body.conversationId) : null;
  const connectionId = body.connectionId ?? existing?.connectionId ?? null;
  const connection = connectionId ? await connectionForUse(ctx, connectionId) : null;
  const ai = await requireAi();
  await assertCredits(ctx.orgId, ctx.userId);

  const [schema, notes, available] = await Promise.all([
    connection ? cachedSchema(ctx, connection.id) : Promise.resolve(null),
    connection ? annotationsFor(ctx, connection.id) : Promise.resolve([]),
    connection ? Promise.resolve([]) : availableConnections(ctx),
  ]);
  const history = existing
    ? await conversationStore.recentMessages(ctx.orgId, existing.id, HISTORY_MESSAGES)
    : [];

  let conversationId: string;
  if (existing) {
    conversationId = existing.id;
    if (body.connectionId && body.connectionId !== existing.connectionId)
      await conversationStore.update(ctx.orgId, ctx.userId, existing.id, { connectionId: body.connectionId });
  } else {
    conversationId = (
      await conversationStore.create({
        orgId: ctx.orgId,
        userId: ctx.userId,
        title: titleFrom(body.message),
        connectionId: connection?.id ?? null,
      })
    ).id;
  }
  const asked = await conversationStore.append(ctx.orgId, ctx.userId, conversationId, {
    role: 'USER',
    content: body.message,
    sqlQuery: null,
    resultSummary: null,
    promptTokens: null,
    completionTokens: null,
    model: null,
  });
  if (!asked) throw notFound('Conversation');
  const messageId = newId();

  const answer = async (emit?: (e: ChatEvent) => void, signal?: AbortSignal): Promise<ChatResponse> => {
    try {
      const r = await runAssistant({
        ai,
        ctx,
        connection: connection && {
          id: connection.id,
          name: connection.name,
          type: connection.type,
          database: connection.database,
        },
        availableConnections: available,
        tables: schema?.schema.tables ?? null,
        notes,
        values: usableValues(schema?.values, notes),
        schemaKey: schema && connection ? schemaKey(connection.id, schema.schemaUpdatedAt, notes) : undefined,
        schemaSummary: schema?.schemaSummary ?? null,
        history,
        question: body.message,
        emit,
        signal,
      });
      await conversationStore.append(ctx.orgId, ctx.userId, conversationId, {
        id: messageId,
        role: 'ASSISTANT',
        content: r.content,
        sqlQuery: r.sqlQuery,
        resultSummary: r.resultSummary,
        promptTokens: r.usage.promptTokens,
        completionTokens: r.usage.completionTokens,
        model: r.usage.model,
      });
      count('chatRequests', { outcome: 'answered' });
      return {
        messageId,
        conversationId,
        content: r.content,
        sqlQuery: r.sqlQuery,
        intent: r.intent,
        queryResult: r.queryResult,
        steps: r.steps,
        usage: r.usage,
      };
    } catch (e) {
      const err = isAppError(e) ? e : unexpected(e);
      count('chatRequests', { outcome: 'failed' });
      // The question stays answered, so that the conversation's history keeps its pairs.
      await conversationStore
        .append(ctx.orgId, ctx.userId, conversationId, {
          id: messageId,
          role: 'ASSISTANT',
          content: `No answer: ${err.message}`,
          sqlQuery: null,
          resultSummary: null,
          promptTokens: null,
          completionTokens: null,
          model: null,
        })
        .catch(() => undefined);
      throw err;
    }
  };

  if (!body.stream) return { data: await answer() };
  return sseReply(async (sink: StreamSink) => {
    const send = (e: ChatEvent) => sink.write(sseEvent(e));
    send({ type: 'start', conversationId, messageId });
    try {
      const response = await answer(send, sink.signal);
      send({ type: 'done', ...response });
    } catch (e) {
      const err = isAppError(e) ? e : unexpected(e);
      send({ type: 'error', code: err.code, message: err.message });
    }
  });
}

async function availableConnections(ctx: AuthContext) {
  const page = await listConnections(ctx, { page: 1, pageSize: 100 });
  return page.data.map((c) => ({ id: c.id, name: c.name, type: c.type }));
}

function unexpected(e: unknown): AppError {
  logger().error('Chat failed unexpectedly', {
    error: e instanceof Error ? { name: e.name, message: e.message, stack: e.stack } : String(e),
  });
  return new AppError(
    500,
    'INTERNAL_ERROR',
    'An unexpected error occurred. The request id identifies it in our logs.',
  );
}
