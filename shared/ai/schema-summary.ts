import type { AuthContext } from '../auth/context';
import type { DbType, SchemaSnapshot } from '../databases/drivers/types';
import { logger } from '../platform/logger';
import { remainingCents } from '../usage/balance';
import { callModel } from './model';
import { aiProvider } from './provider';

/** Characters of the facts sent to the model, and of the overview kept. */
const INPUT_CHARS = 16_000;
export const SUMMARY_CHARS = 2_000;
/** A summary is written while a connection test or schema refresh waits: it must not hold it up long. */
const SUMMARY_TIMEOUT_MS = 15_000;

/**
 * A model-written overview of a schema (feature `schema_summary`, paid from the caller's balance), or
 * null when no model is configured, the balance is used up, or the call fails: the caller then keeps
 * the deterministic summary. The model is sent only the deterministic summary (table and column names,
 * types, keys, references, row estimates), never any row data.
 */
export async function modelSchemaSummary(
  ctx: AuthContext,
  connection: { name: string; type: DbType; database: string },
  schema: SchemaSnapshot,
  facts: string,
): Promise<string | null> {
  if (!schema.tables.length) return null;
  try {
    const ai = await aiProvider();
    if (!ai) return null;
    if (!((await remainingCents(ctx.orgId, ctx.userId)) > 0)) return null;
    const input = facts.length > INPUT_CHARS ? `${facts.slice(0, INPUT_CHARS)}\n…` : facts;
    const turn = await callModel({
      ai,
      who: { orgId: ctx.orgId, userId: ctx.userId },
      feature: 'schema_summary',
      temperature: 0,
      maxTokens: 600,
      signal: AbortSignal.timeout(SUMMARY_TIMEOUT_MS),
      messages: [
        {
          role: 'system',
          content:
            'You write the schema overview of a database for analysts and for an assistant that writes SQL. In at most 250 words of plain text: what the database is about, its main entities and how they relate (join paths), and which tables hold the important facts (amounts, dates, statuses). Name real tables and columns only. No preamble, no Markdown headings.',
        },
        {
          role: 'user',
          content: `Database "${connection.name}" (${connection.type}, ${connection.database}).\n\n${input}`,
        },
      ],
    });
    const text = turn.content.trim();
    if (!text) return null;
    return text.length > SUMMARY_CHARS ? `${text.slice(0, SUMMARY_CHARS - 1)}…` : text;
  } catch (e) {
    logger().warn('Model-written schema summary failed; keeping the deterministic one', {
      error: (e as Error).message,
    });
    return null;
  }
}
