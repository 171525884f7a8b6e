import type { QueryResult } from '../databases/drivers/types';
import type { Intent } from './intent';

/** One tool call the assistant made while answering. */
export interface ChatStep {
  action: 'run_query' | 'search_schema' | 'search_tables' | 'describe_tables' | 'invalid_tool_call';
  detail: string;
  sql: string | null;
  queryResult: { columns: string[]; rowCount: number; executionTime: number } | null;
  queryError: string | null;
}

export interface ChatResponse {
  messageId: string;
  conversationId: string;
  content: string;
  sqlQuery: string | null;
  intent: Intent | null;
  queryResult: QueryResult | null;
  steps: ChatStep[];
  usage: { model: string; promptTokens: number; completionTokens: number };
}
