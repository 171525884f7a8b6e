import * as z from 'zod/mini';
import { endpoint, once } from '../http/endpoint';
import { Deleted, describe, IdParams, PageQuery } from '../http/schemas';

export const Conversation = once(() =>
  z.object({
    id: z.string(),
    orgId: z.string(),
    userId: z.string(),
    connectionId: z.nullable(z.string()),
    title: z.string(),
    createdAt: z.string(),
    updatedAt: z.string(),
  }),
);

export const Message = once(() =>
  z.object({
    id: z.string(),
    conversationId: z.string(),
    role: z.enum(['USER', 'ASSISTANT']),
    content: z.string(),
    sqlQuery: z.nullable(z.string()),
    resultSummary: z.nullable(z.string()),
    promptTokens: z.nullable(z.number().check(z.int())),
    completionTokens: z.nullable(z.number().check(z.int())),
    model: z.nullable(z.string()),
    createdAt: z.string(),
  }),
);

export const ConversationWithMessages = once(() =>
  z.extend(Conversation(), {
    messageCount: describe(z.number().check(z.int()), 'All messages of the conversation'),
    messages: describe(
      z.array(Message()),
      'The latest 100 messages, oldest first (all of them via /messages)',
    ),
  }),
);

const Title = z.string().check(z.trim(), z.minLength(1), z.maxLength(200));

export const ConversationCreate = z.object({
  title: z.optional(Title),
  connectionId: z.optional(z.nullable(z.string().check(z.minLength(1), z.maxLength(100)))),
});
export const ConversationUpdate = z.object({ title: Title });

export const listConversations = endpoint({
  method: 'GET',
  path: '/conversations',
  tag: 'Chat',
  summary: 'List the calling user’s conversations, most recently active first',
  scope: 'chat',
  query: z.extend(PageQuery, {
    connectionId: z.optional(z.string().check(z.minLength(1), z.maxLength(100))),
  }),
  response: () => z.array(Conversation()),
  paginated: true,
});
export const createConversation = endpoint({
  method: 'POST',
  path: '/conversations',
  tag: 'Chat',
  summary: 'Start an empty conversation (optionally bound to a connection)',
  scope: 'chat',
  body: ConversationCreate,
  bodyOptional: true,
  status: 201,
  response: Conversation,
  errors: [404],
});
export const getConversation = endpoint({
  method: 'GET',
  path: '/conversations/{id}',
  tag: 'Chat',
  summary: 'Get a conversation with its messages',
  scope: 'chat',
  params: IdParams,
  response: ConversationWithMessages,
  errors: [404],
});
export const updateConversation = endpoint({
  method: 'PATCH',
  path: '/conversations/{id}',
  tag: 'Chat',
  summary: 'Rename a conversation',
  scope: 'chat',
  params: IdParams,
  body: ConversationUpdate,
  response: Conversation,
  errors: [404],
});
export const deleteConversation = endpoint({
  method: 'DELETE',
  path: '/conversations/{id}',
  tag: 'Chat',
  summary: 'Delete a conversation and its messages',
  scope: 'chat',
  params: IdParams,
  response: Deleted,
  errors: [404],
});
export const listMessages = endpoint({
  method: 'GET',
  path: '/conversations/{id}/messages',
  tag: 'Chat',
  summary: 'List the messages of a conversation in chronological order',
  scope: 'chat',
  params: IdParams,
  query: PageQuery,
  response: () => z.array(Message()),
  paginated: true,
  errors: [404],
});

export const conversationEndpoints = [
  listConversations,
  createConversation,
  getConversation,
  updateConversation,
  deleteConversation,
  listMessages,
];
