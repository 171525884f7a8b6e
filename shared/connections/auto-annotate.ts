import * as z from 'zod/mini';
import { modelAnnotations } from '../ai/annotate';
import type { AuthContext } from '../auth/context';
import type {
  ConnectionTarget,
  DbType,
  QueryResult,
  SchemaSnapshot,
  TableInfo,
} from '../databases/drivers/types';
import { runReadOnly } from '../databases/run';
import { AppError, validationError } from '../platform/errors';
import { nowIso } from '../platform/ids';
import { logger } from '../platform/logger';
import { queue } from '../platform/queue';
import { type AnnotationInput, listAnnotationsOf, writeAnnotation } from './annotations';
import { loadConnection } from './connections';
import { refreshEmbeddingIndex } from './embedding-index';
import { loadSchema } from './schema-store';
import { connectionStore } from './store';
import { targetFor } from './target';

/**
 * Automatic annotation. `requestAutoAnnotation` (POST …/annotations/auto) checks the request and queues a
 * job; the `annotate` worker runs `runAutoAnnotation`, which writes one annotation per table and column
 * from the cached schema and a bounded read-only sample of each table.
 *
 * Seam for the model-written path: `annotator` below is the function that turns a table and its sample
 * into annotation texts. When a model is configured, `modelAnnotations` (shared/ai/annotate.ts) rewrites
 * its descriptions (feature auto_annotation, paid by the requesting user), falling back to these texts
 * without a model or on failure; writing, the never-overwrite-a-user rule and sampling stay here.
 */
export const AnnotateJob = z.object({
  orgId: z.string().check(z.minLength(1)),
  connectionId: z.string().check(z.minLength(1)),
  /** null: every table of the cached schema at the time the job runs. */
  tables: z.nullable(z.array(z.string())),
  requestedBy: z.string(),
  requestedAt: z.string(),
  /** Only bring the embedding index up to date after a user's edit (annotation-embeddings.ts). */
  embedOnly: z.optional(z.boolean()),
});
export type AnnotateJob = z.infer<typeof AnnotateJob>;

export const SAMPLE_ROWS = 50;
const SAMPLE_TIMEOUT_MS = 10_000;
const SAMPLE_MAX_BYTES = 1024 * 1024;
const EXAMPLES_SHOWN = 5;
const EXAMPLE_CHARS = 40;
/**
 * A text column with at most this many distinct values in the sample, each seen at least twice on
 * average (or the whole table sampled), is treated as a code or category column: every value seen is
 * kept as an example (most frequent first), so that a question naming one (`LAM`, `CZK`) finds the column.
 */
export const LOW_CARDINALITY_VALUES = 20;
const LOW_CARDINALITY_CHARS = 400;

/** Names that suggest secrets or personal identifiers: their values are never copied into annotations. */
const SENSITIVE =
  /pass(word)?|secret|token|hash|salt|api_?key|private|ssn|social_security|credit_?card|card_?number|cvv|iban|e_?mail|phone/i;

export async function requestAutoAnnotation(ctx: AuthContext, connectionId: string, tables?: string[]) {
  await loadConnection(ctx, connectionId);
  const cached = await loadSchema(ctx.orgId, connectionId);
  if (!cached)
    throw new AppError(
      412,
      'SCHEMA_NOT_INTROSPECTED',
      'The schema of this connection has not been introspected yet: run POST /connections/{id}/test or POST /connections/{id}/schema first.',
    );
  const known = cached.schema.tables.map((t) => t.name);
  let chosen = known;
  if (tables) {
    const resolved: string[] = [];
    const missing: string[] = [];
    for (const name of tables) {
      const exact = known.find((k) => k === name);
      const loose = known.filter((k) => k.toLowerCase() === name.toLowerCase());
      const match = exact ?? (loose.length === 1 ? loose[0] : undefined);
      if (match) resolved.push(match);
      else missing.push(name);
    }
    if (missing.length)
      throw validationError(`Not in the cached schema: ${missing.slice(0, 20).join(', ')}.`, {
        issues: missing.map((m) => ({
          path: 'body.tables',
          message: `unknown table "${m}"`,
          code: 'custom',
        })),
      });
    chosen = [...new Set(resolved)];
  }
  const job: AnnotateJob = {
    orgId: ctx.orgId,
    connectionId,
    tables: tables ? chosen : null,
    requestedBy: ctx.userId,
    requestedAt: nowIso(),
  };
  await queue().send('annotate', job);
  return {
    message: `Automatic annotation of ${chosen.length} table${chosen.length === 1 ? '' : 's'} queued; annotations appear as each table is done. Annotations written by hand are kept.`,
    connectionId,
    tables: chosen,
    tableCount: chosen.length,
  };
}

export interface AnnotateSummary {
  tables: number;
  created: number;
  updated: number;
  kept: number;
  sampleErrors: number;
}

/** The annotate worker's use case. Idempotent: a repeat refreshes auto annotations to the same content. */
export async function runAutoAnnotation(job: AnnotateJob): Promise<AnnotateSummary> {
  const summary: AnnotateSummary = { tables: 0, created: 0, updated: 0, kept: 0, sampleErrors: 0 };
  const rec = await connectionStore.get(job.orgId, job.connectionId);
  const cached = rec ? await loadSchema(job.orgId, job.connectionId) : null;
  if (!rec || !cached) return summary; // deleted meanwhile: nothing to do
  const wanted = job.tables ? new Set(job.tables) : undefined;
  const tables = cached.schema.tables.filter((t) => !wanted || wanted.has(t.name));
  const target = await targetFor(rec);
  // Columns an annotation excludes (`sampleValues: false`) are never read: the sample names the others.
  const exclusions = (await listAnnotationsOf(job.orgId, job.connectionId)).filter(
    (n) => n.sampleValues === false,
  );
  for (const table of tables) {
    let sample: QueryResult | undefined;
    const readable = table.columns
      .map((c) => c.name)
      .filter((c) => !exclusions.some((n) => excludedByNote(n, table.name, c)));
    try {
      if (!readable.length) throw new Error('every column is excluded from sampling by an annotation');
      sample = await sampleTable(
        target,
        table,
        readable.length < table.columns.length ? readable : undefined,
      );
    } catch (e) {
      summary.sampleErrors++;
      logger().warn('auto annotation: sampling failed', {
        connectionId: rec.id,
        table: table.name,
        error: (e as Error).message,
      });
    }
    const base = annotator(table, cached.schema, sample);
    const who = { orgId: job.orgId, userId: job.requestedBy };
    for (const a of (await modelAnnotations(who, rec, table, base)) ?? base) {
      const { outcome } = await writeAnnotation(job.orgId, job.connectionId, a, 'auto');
      summary[outcome]++;
    }
    summary.tables++;
  }
  logger().info('auto annotation done', { connectionId: rec.id, ...summary });
  // Annotations are part of what the optional embedding index embeds: the changed tables are embedded again.
  if (summary.created + summary.updated > 0)
    await refreshEmbeddingIndex(
      { orgId: job.orgId, userId: job.requestedBy },
      job.connectionId,
      cached.schema.tables,
      () => listAnnotationsOf(job.orgId, job.connectionId),
    );
  return summary;
}

/** The function that writes annotation texts (see the seam note above). */
export let annotator: (table: TableInfo, schema: SchemaSnapshot, sample?: QueryResult) => AnnotationInput[] =
  deterministicAnnotator;
export function setAnnotator(fn: typeof annotator): void {
  annotator = fn;
}

const quote = (type: DbType, ident: string) => {
  if (type === 'MYSQL' || type === 'MARIADB') return `\`${ident.replaceAll('`', '``')}\``;
  if (type === 'MSSQL') return `[${ident.replaceAll(']', ']]')}]`;
  return `"${ident.replaceAll('"', '""')}"`;
};

/** Whether an annotation with `sampleValues: false` excludes a column (its own, or its table's). */
const excludedByNote = (n: { tableName: string; columnName: string | null }, table: string, column: string) =>
  (n.tableName.toLowerCase() === table.toLowerCase() ||
    n.tableName.toLowerCase() === table.slice(table.lastIndexOf('.') + 1).toLowerCase()) &&
  (n.columnName === null || n.columnName.toLowerCase() === column.toLowerCase());

/** A bounded read-only sample query for the table, in the connection's dialect (`columns`: only those). */
export function sampleQuery(type: DbType, table: TableInfo, columns?: string[]): string {
  if (type === 'MONGODB')
    return JSON.stringify({
      collection: table.name,
      filter: {},
      ...(columns ? { projection: Object.fromEntries(columns.map((c) => [c, 1])) } : {}),
      limit: SAMPLE_ROWS,
    });
  const parts =
    table.schema && table.name.startsWith(`${table.schema}.`)
      ? [table.schema, table.name.slice(table.schema.length + 1)]
      : [table.name];
  const from = parts.map((p) => quote(type, p)).join('.');
  const what = columns ? columns.map((c) => quote(type, c)).join(', ') : '*';
  return type === 'MSSQL'
    ? `SELECT TOP ${SAMPLE_ROWS} ${what} FROM ${from}`
    : `SELECT ${what} FROM ${from} LIMIT ${SAMPLE_ROWS}`;
}

async function sampleTable(
  target: ConnectionTarget,
  table: TableInfo,
  columns?: string[],
): Promise<QueryResult> {
  return runReadOnly(target, sampleQuery(target.type, table, columns), {
    maxRows: SAMPLE_ROWS,
    maxBytes: SAMPLE_MAX_BYTES,
    timeoutMs: SAMPLE_TIMEOUT_MS,
    // Loupe's own sample: never JIT-compiled (drivers/types.ts ownQuery).
    ownQuery: true,
  });
}

const display = (v: unknown): string => {
  const s = typeof v === 'object' ? JSON.stringify(v) : String(v);
  return s.length > EXAMPLE_CHARS ? `${s.slice(0, EXAMPLE_CHARS - 1)}…` : s;
};

const PATTERNS: Array<[RegExp, string]> = [
  [/^[^@\s]+@[^@\s]+\.[^@\s]+$/, 'email addresses'],
  [/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i, 'UUIDs'],
  [/^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/, 'dates or timestamps'],
  [/^https?:\/\//, 'URLs'],
];

/** Annotation texts from the schema and sample alone: types, keys, relationships, a few values. */
export function deterministicAnnotator(
  table: TableInfo,
  schema: SchemaSnapshot,
  sample?: QueryResult,
): AnnotationInput[] {
  const out: AnnotationInput[] = [];
  const referencedBy = schema.tables.flatMap((t) =>
    t.foreignKeys
      .filter((fk) => fk.referencedTable === table.name)
      .map((fk) => `${t.name}.${fk.columns.join(', ')}`),
  );
  const what = table.kind === 'view' ? 'View' : table.kind === 'collection' ? 'Collection' : 'Table';
  const facts = [
    `${what} with ${table.columns.length} column${table.columns.length === 1 ? '' : 's'}${
      table.rowEstimate !== null ? ` and about ${table.rowEstimate.toLocaleString('en-US')} rows` : ''
    }.`,
  ];
  if (table.primaryKey.length) facts.push(`Primary key: ${table.primaryKey.join(', ')}.`);
  else if (table.kind === 'table') facts.push('No primary key.');
  for (const fk of table.foreignKeys)
    facts.push(
      `${fk.columns.join(', ')} references ${fk.referencedTable}(${fk.referencedColumns.join(', ')}).`,
    );
  if (referencedBy.length) facts.push(`Referenced by ${referencedBy.slice(0, 10).join('; ')}.`);
  if (sample && sample.rowCount === 0) facts.push('The sample found no rows.');
  out.push({
    tableName: table.name,
    columnName: null,
    annotation: facts.join(' '),
    dataType: null,
    examples: null,
  });

  for (const col of table.columns) {
    const parts = [`${col.type}, ${col.nullable ? 'nullable' : 'not null'}.`];
    if (col.primaryKey) parts.push(table.primaryKey.length > 1 ? 'Part of the primary key.' : 'Primary key.');
    const fk = table.foreignKeys.find((f) => f.columns.includes(col.name));
    if (fk) {
      const target = fk.referencedColumns[fk.columns.indexOf(col.name)] ?? fk.referencedColumns[0];
      parts.push(`References ${fk.referencedTable}.${target}.`);
    }
    let examples: string | null = null;
    const sensitive = SENSITIVE.test(col.name);
    if (sample && sample.rowCount > 0 && sample.columns.includes(col.name)) {
      const values = sample.rows.map((r) => r[col.name]);
      const present = values.filter((v) => v !== null && v !== undefined && v !== '');
      const distinct = [
        ...new Set(present.map((v) => (typeof v === 'object' ? JSON.stringify(v) : String(v)))),
      ];
      const emptyShare = Math.round(((values.length - present.length) / values.length) * 100);
      parts.push(
        `In a sample of ${values.length} row${values.length === 1 ? '' : 's'}: ${distinct.length} distinct value${
          distinct.length === 1 ? '' : 's'
        }${emptyShare > 0 ? `, ${emptyShare}% empty` : ''}.`,
      );
      const strings = present.filter((v): v is string => typeof v === 'string');
      if (strings.length && strings.length === present.length)
        for (const [re, label] of PATTERNS)
          if (strings.every((v) => re.test(v))) {
            parts.push(`Values look like ${label}.`);
            break;
          }
      const wholeTable = sample.rowCount < SAMPLE_ROWS && !sample.truncated;
      const lowCardinality =
        strings.length > 0 &&
        strings.length === present.length &&
        distinct.length <= LOW_CARDINALITY_VALUES &&
        strings.every((v) => v.length <= EXAMPLE_CHARS && !PATTERNS.some(([re]) => re.test(v))) &&
        (distinct.length * 2 <= present.length || (wholeTable && distinct.length < present.length));
      if (sensitive)
        parts.push('Example values withheld: the column name suggests a secret or personal identifier.');
      else if (lowCardinality) {
        const count = new Map<string, number>();
        for (const v of strings) count.set(v, (count.get(v) ?? 0) + 1);
        const byFrequency = [...count.entries()]
          .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
          .map(([v]) => display(v));
        let text = '';
        let shown = 0;
        for (const v of byFrequency) {
          const next = text ? `${text}, ${v}` : v;
          if (next.length > LOW_CARDINALITY_CHARS) break;
          text = next;
          shown++;
        }
        examples = text;
        parts.push(
          shown === distinct.length
            ? 'Looks like a category or code: every value seen is listed.'
            : 'Looks like a category or code: the most frequent values seen are listed.',
        );
      } else if (distinct.length) examples = distinct.slice(0, EXAMPLES_SHOWN).map(display).join(', ');
    }
    out.push({
      tableName: table.name,
      columnName: col.name,
      annotation: parts.join(' '),
      dataType: col.type,
      examples,
    });
  }
  return out;
}
