import type { ChatResponse, ChatStep } from './response';

/** The events of a streamed chat answer (decisions.md §5); each is sent as one `data:` line of JSON. */
export type ChatEvent =
  | { type: 'start'; conversationId: string; messageId: string }
  | ({ type: 'step' } & ChatStep)
  | { type: 'sql'; sql: string }
  | {
      type: 'result';
      columns: string[];
      rows: Record<string, unknown>[];
      rowCount: number;
      executionTime: number;
      truncated: boolean;
    }
  | { type: 'delta'; content: string }
  | ({ type: 'done' } & ChatResponse)
  | { type: 'error'; code: string; message: string };

/** One Server-Sent Event: a `data:` line holding the JSON object, then a blank line. */
export function sseEvent(event: ChatEvent): string {
  // JSON.stringify never emits a raw newline, so one data line always suffices.
  return `data: ${JSON.stringify(event)}\n\n`;
}

/** The keep-alive comment (ignored by SSE clients), sent at least every PING_INTERVAL_MS. */
export const SSE_PING = ': ping\n\n';
export const PING_INTERVAL_MS = 15_000;

/** Parses an SSE body back into its JSON events and counts its comments (used by clients and tests). */
export function parseSse(text: string): { events: ChatEvent[]; comments: string[] } {
  const events: ChatEvent[] = [];
  const comments: string[] = [];
  for (const block of text.split(/\r?\n\r?\n/)) {
    const data: string[] = [];
    for (const line of block.split(/\r?\n/)) {
      if (line.startsWith(':')) comments.push(line.slice(1).trim());
      else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
    }
    if (data.length) events.push(JSON.parse(data.join('\n')) as ChatEvent);
  }
  return { events, comments };
}
