import * as z from 'zod/mini';
import { QueryResult } from '../connections/schemas';
import { endpoint } from '../http/endpoint';
import { describe } from '../http/schemas';

export const MAX_MESSAGE_CHARS = 8_000;

export const ChatRequest = z.object({
  message: z.string().check(z.trim(), z.minLength(1), z.maxLength(MAX_MESSAGE_CHARS)),
  connectionId: z.optional(z.nullable(z.string().check(z.minLength(1), z.maxLength(100)))),
  conversationId: z.optional(z.nullable(z.string().check(z.minLength(1), z.maxLength(100)))),
  stream: z._default(z.boolean(), false),
});

export const ChatStep = z.object({
  action: z.enum(['run_query', 'search_schema', 'search_tables', 'describe_tables', 'invalid_tool_call']),
  detail: z.string(),
  sql: z.nullable(z.string()),
  queryResult: z.nullable(
    z.object({
      columns: z.array(z.string()),
      rowCount: z.number().check(z.int()),
      executionTime: z.number(),
    }),
  ),
  queryError: z.nullable(z.string()),
});

export const ChatResponse = z.object({
  messageId: z.string(),
  conversationId: z.string(),
  content: describe(z.string(), 'The answer in plain language'),
  sqlQuery: describe(z.nullable(z.string()), 'The last query that ran successfully'),
  intent: z.nullable(z.enum(['data_question', 'schema_question', 'follow_up', 'clarification', 'other'])),
  queryResult: describe(z.nullable(QueryResult()), 'The full (capped) result of sqlQuery'),
  steps: z.array(ChatStep),
  usage: z.object({
    model: z.string(),
    promptTokens: z.number().check(z.int()),
    completionTokens: z.number().check(z.int()),
  }),
});

export const chat = endpoint({
  method: 'POST',
  path: '/chat',
  tag: 'Chat',
  summary:
    'Ask a question in plain language; the answer comes with the SQL that ran and its result. With stream: true the reply is text/event-stream (events start, step, sql, result, delta, done, error; `: ping` comments).',
  scope: 'chat',
  ai: true,
  body: ChatRequest,
  response: ChatResponse,
  errors: [402, 404, 503],
});

export const chatEndpoints = [chat];
