/**
 * MongoDB queries are JSON (decisions.md §3), read as MongoDB Extended JSON (relaxed) so values
 * such as {"$oid": "…"} and {"$date": "…"} keep their type:
 *   {"collection": "orders", "pipeline": [ … ]}
 *   {"collection": "orders", "filter": {…}, "projection": {…}, "sort": {…}, "limit": 10, "skip": 0}
 * Stages that write ($out, $merge) at any depth are READ_ONLY_VIOLATION, and so is server-side
 * JavaScript ($where, $function, $accumulator) and $changeStream (not a bounded read).
 */
import { AppError, validationError } from '../platform/errors';
import { MAX_JSON_DEPTH, nestedDeeperThan } from '../platform/json-depth';

export type MongoQuery =
  | { collection: string; pipeline: Record<string, unknown>[] }
  | {
      collection: string;
      filter: Record<string, unknown>;
      projection?: Record<string, unknown>;
      sort?: Record<string, unknown>;
      limit?: number;
      skip?: number;
    };

const writeStages = new Set(['$out', '$merge']);
const javascript = new Set(['$where', '$function', '$accumulator']);
const unbounded = new Set(['$changeStream', '$changeStreamSplitLargeEvent']);
const allowedKeys = new Set(['collection', 'pipeline', 'filter', 'projection', 'sort', 'limit', 'skip']);

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  !!v && typeof v === 'object' && !Array.isArray(v);

const readOnlyViolationOf = (statementType: string, message: string) =>
  new AppError(400, 'READ_ONLY_VIOLATION', message, { statementType });

/** Validates the JSON text and returns it as plain JSON (Extended JSON still undecoded). */
export function parseMongoQuery(text: string): MongoQuery {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw validationError(
      `A MongoDB query is JSON: {"collection": "…", "pipeline": […]} or {"collection": "…", "filter": {…}}. It did not parse: ${(e as Error).message}`,
    );
  }
  if (!isPlainObject(raw)) throw validationError('A MongoDB query is a JSON object with a "collection".');
  // Before any recursive walk (here, in Extended JSON decoding and in the driver): bounded depth.
  if (nestedDeeperThan(raw))
    throw validationError(`The MongoDB query is nested more than ${MAX_JSON_DEPTH} levels deep.`, {
      maxDepth: MAX_JSON_DEPTH,
    });
  const unknown = Object.keys(raw).filter((k) => !allowedKeys.has(k));
  if (unknown.length > 0)
    throw validationError(`Unknown field(s) in the MongoDB query: ${unknown.join(', ')}.`, {
      fields: unknown,
    });
  if (typeof raw.collection !== 'string' || raw.collection.trim() === '' || raw.collection.includes('\u0000'))
    throw validationError('The MongoDB query needs "collection": the name of a collection.');
  if (raw.collection.startsWith('system.'))
    throw readOnlyViolationOf('SYSTEM_COLLECTION', 'System collections cannot be queried.');
  walk(raw);
  if ('pipeline' in raw) {
    for (const k of ['filter', 'projection', 'sort', 'limit', 'skip'])
      if (k in raw) throw validationError(`Use either "pipeline" or "${k}", not both.`);
    if (!Array.isArray(raw.pipeline) || !raw.pipeline.every(isPlainObject))
      throw validationError('"pipeline" must be an array of stage objects.');
    for (const stage of raw.pipeline)
      if (Object.keys(stage).length !== 1)
        throw validationError(
          'Each pipeline stage is an object with exactly one stage operator, e.g. {"$match": {…}}.',
        );
    return { collection: raw.collection, pipeline: raw.pipeline as Record<string, unknown>[] };
  }
  const filter = raw.filter ?? {};
  if (!isPlainObject(filter)) throw validationError('"filter" must be an object.');
  for (const k of ['projection', 'sort'] as const)
    if (raw[k] !== undefined && !isPlainObject(raw[k])) throw validationError(`"${k}" must be an object.`);
  for (const k of ['limit', 'skip'] as const)
    if (raw[k] !== undefined && (!Number.isInteger(raw[k]) || (raw[k] as number) < 0))
      throw validationError(`"${k}" must be a non-negative integer.`);
  return {
    collection: raw.collection,
    filter,
    projection: raw.projection as Record<string, unknown> | undefined,
    sort: raw.sort as Record<string, unknown> | undefined,
    limit: raw.limit as number | undefined,
    skip: raw.skip as number | undefined,
  };
}

function walk(node: unknown): void {
  if (Array.isArray(node)) {
    for (const n of node) walk(n);
    return;
  }
  if (!isPlainObject(node)) return;
  for (const [k, v] of Object.entries(node)) {
    if (writeStages.has(k))
      throw readOnlyViolationOf(k, `The ${k} stage writes to a collection; only reads can run here.`);
    if (javascript.has(k))
      throw readOnlyViolationOf(
        k,
        `${k} runs JavaScript on the server and is not allowed in a read-only query.`,
      );
    if (unbounded.has(k))
      throw readOnlyViolationOf(k, `${k} opens a change stream; only bounded reads can run here.`);
    walk(v);
  }
}
