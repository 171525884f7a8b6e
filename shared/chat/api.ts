import * as z from 'zod';
import { QueryResult } from '../connections/schemas';
import { endpoint } from '../http/endpoint';

export const MAX_MESSAGE_CHARS = 8_000;

export const ChatRequest = z.object({
  message: z.string().trim().min(1).max(MAX_MESSAGE_CHARS),
  connectionId: z.string().min(1).max(100).nullable().optional(),
  conversationId: z.string().min(1).max(100).nullable().optional(),
  stream: z.boolean().default(false),
});

export const ChatStep = z.object({
  action: z.enum(['run_query', 'search_tables', 'describe_tables', 'invalid_tool_call']),
  detail: z.string(),
  sql: z.string().nullable(),
  queryResult: z
    .object({ columns: z.array(z.string()), rowCount: z.number().int(), executionTime: z.number() })
    .nullable(),
  queryError: z.string().nullable(),
});

export const ChatResponse = z.object({
  messageId: z.string(),
  conversationId: z.string(),
  content: z.string().describe('The answer in plain language'),
  sqlQuery: z.string().nullable().describe('The last query that ran successfully'),
  intent: z.enum(['data_question', 'schema_question', 'follow_up', 'clarification', 'other']).nullable(),
  queryResult: QueryResult().nullable().describe('The full (capped) result of sqlQuery'),
  steps: z.array(ChatStep),
  usage: z.object({ model: z.string(), promptTokens: z.number().int(), completionTokens: z.number().int() }),
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
