import { createHash } from 'node:crypto';
import { dot, EmbeddingError, embeddingSettings, embedTexts } from '../ai/embeddings';
import { aiProvider } from '../ai/provider';
import type { TableInfo } from '../databases/drivers/types';
import { db } from '../platform/db/store';
import { newId, nowIso, padSeq } from '../platform/ids';
import { logger } from '../platform/logger';
import { remainingCents } from '../usage/balance';
import { bareName, type NoteLike, notesOf, rawWords } from './schema-index';
import { connPk, deleteKeys, keysOf } from './store';

/**
 * The optional embedding index of a schema (LOUPE_EMBEDDING_MODEL): one vector per table, from the
 * text `embeddingText` writes (name and its words, the database's comments, column names with their
 * comments, annotations). Built when a schema is introspected and after automatic annotation (only
 * the tables whose text changed are sent to the embeddings endpoint; cost: usage `schema_embedding`).
 * At chat time the question is embedded (usage `chat_embedding`) and the nearest tables that lexical
 * ranking left out are added to the first request (schema-context.ts). Any failure of the endpoint leaves
 * chat on lexical ranking and rests the endpoint for that connection for COOLDOWN_MS.
 *
 * Items, in the connection's partition (ORG#o#CONN#c), removed with the connection:
 *  EMBIDX                  meta: model, dimensions, gen, chunks, count, builtAt
 *  EMBIDX#<gen>#<n>        chunk n: `entries` (JSON [[table name, text hash], …]) and `vectors`
 *                          (the same tables' float32 vectors, little-endian, one binary attribute);
 *                          at most CHUNK_BYTES of vectors per item (DynamoDB's limit is 400 KB)
 */
export const CHUNK_BYTES = 300_000;
/** Characters of one table's text sent to the embeddings endpoint. */
export const TABLE_TEXT_CHARS = 2_000;
/** Tables embedded per schema at most (the largest schemas keep lexical ranking for the rest). */
export const MAX_EMBEDDED_TABLES = 5_000;
/** Tables the question's embedding contributes to the fusion (best first). */
export const SEMANTIC_TOP = 20;
/** How long the endpoint is left alone for a connection after it failed. */
export const COOLDOWN_MS = 10 * 60_000;
/** Time for one embeddings request: building (the connection test or refresh waits) and at chat time. */
const BUILD_TIMEOUT_MS = 20_000;
/** Time a build may spend embedding (it starts no new request after this). */
const BUILD_BUDGET_MS = 30_000;
/** Tables per embeddings request when building. */
const BUILD_BATCH = 128;
const QUESTION_TIMEOUT_MS = 8_000;

const META_SK = 'EMBIDX';
const chunkPrefix = (gen: string) => `EMBIDX#${gen}#`;

interface Meta {
  model: string;
  /** Asked dimensions (LOUPE_EMBEDDING_DIMENSIONS) or 0 for the model's own. */
  asked: number;
  /** Length of every stored vector. */
  dimensions: number;
  gen: string;
  chunks: number;
  count: number;
  builtAt: string;
}

interface Entry {
  name: string;
  hash: string;
  vector: Float32Array;
}

export interface StoredIndex {
  model: string;
  asked: number;
  dimensions: number;
  gen: string;
  entries: Entry[];
}

/** What is embedded for a table: its name and name words, comments, columns and annotations, clipped. */
export function embeddingText(table: TableInfo, notes: NoteLike[]): string {
  const words = rawWords(bareName(table.name)).join(' ');
  const lines = [`${table.kind === 'view' ? 'View' : 'Table'} ${table.name} (${words})`];
  if (table.comment) lines.push(table.comment);
  lines.push(
    `Columns: ${table.columns
      .map((c) => (c.comment ? `${c.name} (${c.comment.slice(0, 120)})` : c.name))
      .join(', ')}`,
  );
  const own = notesOf(table, notes);
  const tableNote = own.find((n) => n.columnName === null);
  if (tableNote) lines.push(tableNote.annotation);
  for (const n of own)
    if (n.columnName !== null) lines.push(`${n.columnName}: ${n.annotation.slice(0, 160)}`);
  const text = lines.join('\n');
  return text.length <= TABLE_TEXT_CHARS ? text : text.slice(0, TABLE_TEXT_CHARS);
}

const hashOf = (text: string) => createHash('sha256').update(text).digest('base64url').slice(0, 16);

// ---- Cool-down after a failure (per instance; a cold instance may try once more) ----

const resting = new Map<string, number>();
const restKey = (orgId: string, connectionId: string) => `${orgId}/${connectionId}`;

export function embeddingsResting(orgId: string, connectionId: string): boolean {
  const until = resting.get(restKey(orgId, connectionId));
  if (until === undefined) return false;
  if (Date.now() < until) return true;
  resting.delete(restKey(orgId, connectionId));
  return false;
}

function rest(orgId: string, connectionId: string, why: string, e: unknown) {
  resting.set(restKey(orgId, connectionId), Date.now() + COOLDOWN_MS);
  logger().warn(
    `Embeddings endpoint failed (${why}); lexical ranking only for this connection for 10 minutes`,
    {
      orgId,
      connectionId,
      error: e instanceof Error ? e.message.slice(0, 300) : String(e).slice(0, 300),
    },
  );
}

/** Tests: forget every cool-down. */
export function resetEmbeddingCooldowns(): void {
  resting.clear();
}

// ---- Storage ----

/** Decoded indexes by connection, kept while their generation is current (and small enough). */
const cache = new Map<string, StoredIndex>();
const CACHED_INDEXES = 8;
const CACHED_INDEX_BYTES = 16 * 1024 * 1024;

export async function loadEmbeddingIndex(orgId: string, connectionId: string): Promise<StoredIndex | null> {
  const pk = connPk(orgId, connectionId);
  const meta = await db.get<Meta>(pk, META_SK);
  if (!meta) return null;
  const key = restKey(orgId, connectionId);
  const hit = cache.get(key);
  if (hit && hit.gen === meta.gen) return hit;
  const parts = await db.query<{ sk: string; entries: string; vectors: Uint8Array }>({
    pk,
    prefix: chunkPrefix(meta.gen),
  });
  // Replaced while it was read: the next question reads the new generation.
  if (parts.length !== meta.chunks) return null;
  const entries: Entry[] = [];
  for (const p of parts) {
    const list = JSON.parse(p.entries) as Array<[string, string]>;
    const bytes = Buffer.from(p.vectors);
    if (bytes.byteLength !== list.length * meta.dimensions * 4) return null;
    // A copy on a fresh (aligned) buffer.
    const all = new Float32Array(new Uint8Array(bytes).buffer);
    list.forEach(([name, hash], i) => {
      entries.push({ name, hash, vector: all.subarray(i * meta.dimensions, (i + 1) * meta.dimensions) });
    });
  }
  const index: StoredIndex = {
    model: meta.model,
    asked: meta.asked,
    dimensions: meta.dimensions,
    gen: meta.gen,
    entries,
  };
  cache.delete(key);
  if (entries.length * meta.dimensions * 4 <= CACHED_INDEX_BYTES) cache.set(key, index);
  while (cache.size > CACHED_INDEXES) cache.delete(cache.keys().next().value as string);
  return index;
}

async function saveEmbeddingIndex(
  orgId: string,
  connectionId: string,
  model: string,
  asked: number,
  dimensions: number,
  entries: Entry[],
): Promise<void> {
  const pk = connPk(orgId, connectionId);
  const gen = newId().slice(0, 8);
  const perChunk = Math.max(1, Math.floor(CHUNK_BYTES / (dimensions * 4)));
  let chunks = 0;
  for (let i = 0; i < entries.length; i += perChunk) {
    const part = entries.slice(i, i + perChunk);
    const vectors = new Float32Array(part.length * dimensions);
    part.forEach((e, j) => {
      vectors.set(e.vector, j * dimensions);
    });
    await db.put({
      pk,
      sk: `${chunkPrefix(gen)}${padSeq(chunks++)}`,
      entries: JSON.stringify(part.map((e) => [e.name, e.hash])),
      vectors: new Uint8Array(vectors.buffer),
    });
  }
  const meta: Meta = { model, asked, dimensions, gen, chunks, count: entries.length, builtAt: nowIso() };
  await db.put({ pk, sk: META_SK, kind: 'embedding-index', ...meta });
  // Older generations go once the meta item points at the new one.
  const current = await db.get<Meta>(pk, META_SK);
  const keep = current ? chunkPrefix(current.gen) : chunkPrefix(gen);
  await deleteKeys((await keysOf(pk, 'EMBIDX#')).filter((k) => !k.sk.startsWith(keep)));
}

// ---- Building ----

export interface BuildOutcome {
  /** Tables whose text was sent to the endpoint. */
  embedded: number;
  /** Tables whose stored vector was kept (text unchanged). */
  reused: number;
}

/**
 * Brings the connection's embedding index up to date with the schema: embeds only the tables whose
 * text changed (or that are new), keeps the other vectors, drops tables that are gone. Paid by `who`
 * (usage `schema_embedding`). Does nothing when embeddings are off, no model is configured, the
 * balance is used up, or the endpoint is resting; never throws (a failure is logged and rests the
 * endpoint for the connection). Returns what it did, or null when it did nothing.
 */
export async function refreshEmbeddingIndex(
  who: { orgId: string; userId: string },
  connectionId: string,
  tables: TableInfo[],
  loadNotes: () => Promise<NoteLike[]>,
): Promise<BuildOutcome | null> {
  const settings = embeddingSettings();
  if (!settings || !tables.length || embeddingsResting(who.orgId, connectionId)) return null;
  try {
    const ai = await aiProvider();
    if (!ai) return null;
    if (!((await remainingCents(who.orgId, who.userId)) > 0)) return null;
    const notes = await loadNotes();
    const asked = settings.dimensions ?? 0;
    const stored = await loadEmbeddingIndex(who.orgId, connectionId).catch(() => null);
    const usable = stored && stored.model === settings.model && stored.asked === asked ? stored : null;
    const known = new Map((usable?.entries ?? []).map((e) => [e.hash, e.vector]));
    const chosen = tables.slice(0, MAX_EMBEDDED_TABLES);
    const texts = chosen.map((t) => embeddingText(t, notes));
    const hashes = texts.map(hashOf);
    const missing = [...new Set(hashes.filter((h) => !known.has(h)))];
    const unchanged =
      usable &&
      !missing.length &&
      usable.entries.length === chosen.length &&
      usable.entries.every((e, i) => e.name === chosen[i].name && e.hash === hashes[i]);
    if (unchanged) return { embedded: 0, reused: chosen.length };
    // Batches until BUILD_BUDGET_MS is spent: tables left over keep no vector until the next build
    // (the connection test or refresh that waits for this is never held up much longer).
    const textOf = new Map(hashes.map((h, i) => [h, texts[i]]));
    const deadline = Date.now() + BUILD_BUDGET_MS;
    let embedded = 0;
    for (let i = 0; i < missing.length && Date.now() < deadline; i += BUILD_BATCH) {
      const batch = missing.slice(i, i + BUILD_BATCH);
      const vectors = await embedTexts({
        ai,
        who,
        feature: 'schema_embedding',
        model: settings.model,
        dimensions: settings.dimensions,
        texts: batch.map((h) => textOf.get(h)!),
        timeoutMs: BUILD_TIMEOUT_MS,
      });
      const length = usable?.dimensions ?? known.values().next().value?.length ?? vectors[0].length;
      if (vectors.some((v) => v.length !== length))
        throw new EmbeddingError(`vectors of ${vectors[0].length} dimensions, the index has ${length}`);
      batch.forEach((h, j) => {
        known.set(h, vectors[j]);
      });
      embedded += batch.length;
    }
    const entries = chosen.flatMap((t, i) => {
      const vector = known.get(hashes[i]);
      return vector ? [{ name: t.name, hash: hashes[i], vector }] : [];
    });
    if (entries.length)
      await saveEmbeddingIndex(
        who.orgId,
        connectionId,
        settings.model,
        asked,
        entries[0].vector.length,
        entries,
      );
    return { embedded, reused: entries.length - embedded };
  } catch (e) {
    if (e instanceof EmbeddingError) rest(who.orgId, connectionId, 'building the schema index', e);
    else
      logger().warn('Building the schema embedding index failed', {
        connectionId,
        error: (e as Error).message,
      });
    return null;
  }
}

// ---- Ranking ----

/**
 * Tables nearest to the question by embedding (indexes into `tables`, best first, SEMANTIC_TOP at most),
 * or undefined when embeddings are off, no index was built, the endpoint is resting, or anything fails
 * (then it rests): the caller keeps lexical ranking. The question's embedding is usage `chat_embedding`.
 */
export async function semanticRanking(input: {
  who: { orgId: string; userId: string };
  connectionId: string;
  tables: TableInfo[];
  question: string;
}): Promise<number[] | undefined> {
  const { who, connectionId, tables } = input;
  const settings = embeddingSettings();
  if (!settings || !tables.length || embeddingsResting(who.orgId, connectionId)) return undefined;
  try {
    const index = await loadEmbeddingIndex(who.orgId, connectionId);
    if (!index || index.model !== settings.model || index.asked !== (settings.dimensions ?? 0))
      return undefined;
    const byName = new Map(index.entries.map((e) => [e.name, e.vector]));
    const candidates: Array<[number, Float32Array]> = [];
    tables.forEach((t, i) => {
      const v = byName.get(t.name);
      if (v) candidates.push([i, v]);
    });
    if (!candidates.length) return undefined;
    const ai = await aiProvider();
    if (!ai) return undefined;
    const [q] = await embedTexts({
      ai,
      who,
      feature: 'chat_embedding',
      model: settings.model,
      dimensions: settings.dimensions,
      texts: [input.question.slice(0, TABLE_TEXT_CHARS)],
      timeoutMs: QUESTION_TIMEOUT_MS,
    });
    if (q.length !== index.dimensions)
      throw new EmbeddingError(
        `question vector of ${q.length} dimensions, the index has ${index.dimensions}`,
      );
    return candidates
      .map(([i, v]) => [i, dot(q, v)] as const)
      .sort((a, b) => b[1] - a[1] || a[0] - b[0])
      .slice(0, SEMANTIC_TOP)
      .map(([i]) => i);
  } catch (e) {
    if (e instanceof EmbeddingError) rest(who.orgId, connectionId, 'ranking tables for a question', e);
    else
      logger().warn('Ranking tables by embedding failed; lexical ranking only', {
        connectionId,
        error: (e as Error).message,
      });
    return undefined;
  }
}
