import { modelSchemaSummary } from '../ai/schema-summary';
import type { AuthContext } from '../auth/context';
import type { DbType, SchemaSnapshot, TableInfo } from '../databases/drivers/types';

/** What a summary may say about the connection (no secrets). */
export interface SummaryConnection {
  id: string;
  name: string;
  type: DbType;
  database: string;
}

/**
 * The schema overview stored with the cached schema. Today the deterministic text below; the chat
 * capability extends this seam with a model-written overview when a model is configured (falling back
 * to this text when the model is not configured or fails). `ctx` identifies who pays for a model call.
 */
export async function summarizeSchema(
  ctx: AuthContext,
  connection: SummaryConnection,
  schema: SchemaSnapshot,
): Promise<string> {
  const facts = deterministicSummary(connection, schema);
  return (await modelSchemaSummary(ctx, connection, schema, facts)) ?? facts;
}

const DETAILED_TABLES = 150;
const COLUMNS_SHOWN = 12;
const fmt = (n: number) => n.toLocaleString('en-US');

function rows(t: TableInfo) {
  return t.rowEstimate === null ? 'row count unknown' : `~${fmt(t.rowEstimate)} rows`;
}

/** Tables, row estimates, keys and relationships as plain text; the same schema always gives the same text. */
export function deterministicSummary(connection: SummaryConnection, schema: SchemaSnapshot): string {
  const tables = [...schema.tables].sort(
    (a, b) => (b.rowEstimate ?? -1) - (a.rowEstimate ?? -1) || a.name.localeCompare(b.name),
  );
  const count = (kind: TableInfo['kind']) => tables.filter((t) => t.kind === kind).length;
  const kinds = [
    [count('table'), 'table'],
    [count('view'), 'view'],
    [count('collection'), 'collection'],
  ]
    .filter(([n]) => (n as number) > 0)
    .map(([n, w]) => `${fmt(n as number)} ${w}${n === 1 ? '' : 's'}`);
  const totalRows = tables.reduce((s, t) => s + (t.rowEstimate ?? 0), 0);
  const lines: string[] = [];
  lines.push(
    `${connection.name} is a ${connection.type} database (${connection.database}) with ${
      kinds.length ? kinds.join(', ') : 'no tables'
    }${totalRows > 0 ? `, about ${fmt(totalRows)} rows in all` : ''}.`,
  );
  if (!tables.length) return lines.join('\n');

  const referencedBy = new Map<string, Set<string>>();
  for (const t of tables)
    for (const fk of t.foreignKeys) {
      if (!referencedBy.has(fk.referencedTable)) referencedBy.set(fk.referencedTable, new Set());
      referencedBy.get(fk.referencedTable)!.add(t.name);
    }
  const hubs = [...referencedBy.entries()]
    .sort((a, b) => b[1].size - a[1].size || a[0].localeCompare(b[0]))
    .slice(0, 5);
  if (hubs.length)
    lines.push(
      `Most referenced: ${hubs.map(([name, by]) => `${name} (by ${[...by].sort().slice(0, 6).join(', ')}${by.size > 6 ? ', …' : ''})`).join('; ')}.`,
    );

  lines.push('', 'Tables, largest first:');
  for (const t of tables.slice(0, DETAILED_TABLES)) {
    const parts = [`${rows(t)}`, `${t.columns.length} column${t.columns.length === 1 ? '' : 's'}`];
    if (t.kind !== 'table') parts.unshift(t.kind);
    const facts: string[] = [];
    facts.push(t.primaryKey.length ? `primary key ${t.primaryKey.join(', ')}` : 'no primary key');
    for (const fk of t.foreignKeys)
      facts.push(`${fk.columns.join(', ')} → ${fk.referencedTable}(${fk.referencedColumns.join(', ')})`);
    const cols = t.columns
      .slice(0, COLUMNS_SHOWN)
      .map((c) => `${c.name} ${c.type}`)
      .join(', ');
    const more = t.columns.length > COLUMNS_SHOWN ? `, +${t.columns.length - COLUMNS_SHOWN} more` : '';
    lines.push(`- ${t.name} (${parts.join('; ')}): ${facts.join('; ')}. Columns: ${cols}${more}.`);
  }
  if (tables.length > DETAILED_TABLES) {
    const rest = tables.slice(DETAILED_TABLES);
    const names = rest.slice(0, 100).map((t) => t.name);
    lines.push(
      `…and ${fmt(rest.length)} more: ${names.join(', ')}${rest.length > names.length ? ', …' : ''}.`,
    );
  }
  return lines.join('\n');
}
