/**
 * MongoDB adapter (mongodb). Queries are JSON (guard/mongo.ts), read as relaxed Extended JSON:
 *   {"collection": "c", "pipeline": [...]}   → aggregate(pipeline + [{$limit: maxRows + 1}], {maxTimeMS})
 *   {"collection": "c", "filter": {...}, …}  → find(filter, {projection, sort, skip, limit ≤ maxRows + 1, maxTimeMS})
 * read through a cursor (batches), stopping at maxRows + 1 documents or the byte cap. Write stages and
 * server-side JavaScript are refused by the guard before this runs; MongoDB has no read-only session.
 * `host` is a host name (port from `port`) or a full mongodb:// / mongodb+srv:// URL without credentials;
 * credentials come from username/password (authSource defaults to admin; a URL may set ?authSource=).
 * The schema is inferred from a bounded $sample of each collection (system collections skipped).
 */
import { BSON, type Document, MongoClient, type MongoClientOptions, type Sort } from 'mongodb';
import { type MongoQuery, parseMongoQuery } from '../../guard/mongo';
import { checkedLookup } from '../host-policy';
import { normalizeValue, RowCollector } from '../values';
import { dbDeadlines, dbPoolSize, serverLimitMs, withTimer } from './deadline';
import { ConnectTimeoutError, QueryTimeoutError } from './errors';
import type {
  ColumnInfo,
  ConnectionTarget,
  Driver,
  QueryOptions,
  QueryResult,
  SchemaSnapshot,
  TableInfo,
} from './types';

export const SAMPLE_SIZE = 100;
export const MAX_COLLECTIONS = 200;

/** The hosts of a target: its host, or every host of a mongodb:// URL (mongodb+srv: the SRV name). */
export function mongoHosts(target: ConnectionTarget): string[] {
  const m = /^mongodb(\+srv)?:\/\/(?:[^@/]*@)?([^/?]*)/i.exec(target.host);
  if (!m) return [target.host];
  return m[2]
    .split(',')
    .map((h) => (h.startsWith('[') ? h.slice(0, h.indexOf(']') + 1) : h.replace(/:\d*$/, '')))
    .filter(Boolean);
}

/** The connection URL (no credentials) and client options for a target. */
export function mongoClientArgs(target: ConnectionTarget): { url: string; options: MongoClientOptions } {
  const url = /^mongodb(\+srv)?:\/\//i.test(target.host)
    ? target.host
    : `mongodb://${target.host.includes(':') && !target.host.startsWith('[') ? `[${target.host}]` : target.host}:${target.port ?? 27017}`;
  const deadlines = dbDeadlines();
  const options: MongoClientOptions = {
    appName: 'loupe',
    // Connections per server in this process (LOUPE_DB_POOL_SIZE, default 20).
    maxPoolSize: dbPoolSize(),
    // Finding a server, connecting and waiting for a free pooled connection: connect-stage timeouts.
    serverSelectionTimeoutMS: deadlines.connectMs,
    connectTimeoutMS: deadlines.connectMs,
    waitQueueTimeoutMS: deadlines.connectMs,
    // A connection that waits longer than any statement may for an answer is closed by the driver (a frozen
    // server; the client timer in query has answered the caller by then).
    socketTimeoutMS: deadlines.statementMs + 1_000,
    tls: target.sslEnabled,
    // Every connection resolves through the host policy and connects to the checked address.
    lookup: checkedLookup as MongoClientOptions['lookup'],
    ...(target.username ? { auth: { username: target.username, password: target.password } } : {}),
  };
  return { url, options };
}

/** The query with Extended JSON values decoded ({"$oid": …} → ObjectId, {"$date": …} → Date). */
export function decodeMongoQuery(text: string): MongoQuery {
  parseMongoQuery(text);
  return BSON.EJSON.parse(text, { relaxed: true }) as MongoQuery;
}

/** The aggregate pipeline or find options that implement the row cap (exported for tests). */
export function mongoPlan(
  q: MongoQuery,
  opts: Pick<QueryOptions, 'maxRows' | 'timeoutMs'>,
  deadline = Date.now() + opts.timeoutMs,
) {
  const cap = opts.maxRows + 1;
  const common = { maxTimeMS: serverLimitMs(deadline), batchSize: Math.min(cap, 500) };
  if ('pipeline' in q)
    return { kind: 'aggregate' as const, pipeline: [...q.pipeline, { $limit: cap }], options: common };
  return {
    kind: 'find' as const,
    filter: q.filter,
    options: {
      ...common,
      ...(q.projection ? { projection: q.projection } : {}),
      ...(q.sort ? { sort: q.sort as Sort } : {}),
      ...(q.skip ? { skip: q.skip } : {}),
      limit: q.limit ? Math.min(q.limit, cap) : cap,
    },
  };
}

export function bsonTypeOf(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (Array.isArray(v)) return 'array';
  if (v instanceof Date) return 'date';
  switch (typeof v) {
    case 'string':
      return 'string';
    case 'boolean':
      return 'bool';
    case 'number':
      return Number.isInteger(v) ? 'int' : 'double';
    case 'bigint':
      return 'long';
  }
  const t = (v as { _bsontype?: string })._bsontype;
  if (t === 'ObjectId') return 'objectId';
  if (t === 'Decimal128') return 'decimal';
  if (t === 'Long') return 'long';
  if (t === 'Binary') return 'binData';
  if (t === 'Timestamp') return 'timestamp';
  if (t === 'BSONRegExp' || v instanceof RegExp) return 'regex';
  if (t) return t.toLowerCase();
  return 'object';
}

/** Columns from sampled documents: top-level fields and one level of nested fields (a.b). */
export function inferColumns(docs: Document[]): ColumnInfo[] {
  const fields = new Map<string, { types: Set<string>; seen: number }>();
  const note = (name: string, v: unknown) => {
    let f = fields.get(name);
    if (!f) {
      f = { types: new Set(), seen: 0 };
      fields.set(name, f);
    }
    f.seen++;
    f.types.add(bsonTypeOf(v));
  };
  for (const d of docs)
    for (const [k, v] of Object.entries(d)) {
      note(k, v);
      if (bsonTypeOf(v) === 'object')
        for (const [k2, v2] of Object.entries(v as Document)) note(`${k}.${k2}`, v2);
    }
  return [...fields.entries()].map(([name, f]) => {
    const types = [...f.types].filter((t) => t !== 'null');
    return {
      name,
      type: types.length ? types.sort().join('|') : 'null',
      nullable: name === '_id' ? false : f.seen < docs.length || f.types.has('null'),
      primaryKey: name === '_id',
    };
  });
}

export function mongoDriver(target: ConnectionTarget): Driver {
  const { url, options } = mongoClientArgs(target);
  const client = new MongoClient(url, options);
  let connecting: Promise<MongoClient> | undefined;
  const ready = () => {
    if (!connecting)
      connecting = client.connect().catch((e) => {
        connecting = undefined;
        throw e;
      });
    return connecting;
  };
  const db = () => client.db(target.database || undefined);
  const deadlines = dbDeadlines();

  return {
    async ping() {
      const started = performance.now();
      const ms = deadlines.testMs;
      const info = await withTimer(
        (async () => {
          await ready();
          await db().command({ ping: 1 });
          return db()
            .command({ buildInfo: 1 })
            .catch(() => undefined);
        })(),
        ms,
        () => new ConnectTimeoutError(ms, 'answering the connection test'),
        () => {},
      );
      return {
        latencyMs: Math.round((performance.now() - started) * 100) / 100,
        serverVersion: info?.version as string | undefined,
      };
    },

    async introspect(opts): Promise<SchemaSnapshot> {
      const ms = opts?.timeoutMs ?? deadlines.statementMs;
      return withTimer(
        introspectAll(),
        ms,
        () => new QueryTimeoutError(ms),
        () => {},
      );
    },

    async query(text: string, opts: QueryOptions): Promise<QueryResult> {
      const q = decodeMongoQuery(text);
      let cursor: { close(): Promise<void> } | undefined;
      return withTimer(
        queryOn(q, opts, (c) => {
          cursor = c;
        }),
        opts.timeoutMs,
        () => new QueryTimeoutError(opts.timeoutMs),
        () => {
          cursor?.close().catch(() => {});
        },
      );
    },

    async close() {
      await client.close().catch(() => {});
    },
  };

  async function introspectAll(): Promise<SchemaSnapshot> {
    await ready();
    const infos = (await db().listCollections({}, { nameOnly: false }).toArray())
      .filter((c) => !c.name.startsWith('system.') && (c.type === 'collection' || c.type === 'view'))
      .sort((a, b) => a.name.localeCompare(b.name))
      .slice(0, MAX_COLLECTIONS);
    const tables: TableInfo[] = [];
    for (const info of infos) {
      const coll = db().collection(info.name);
      const sample = await coll
        .aggregate([{ $sample: { size: SAMPLE_SIZE } }], { maxTimeMS: 10_000 })
        .toArray()
        .catch(() => [] as Document[]);
      const estimate =
        info.type === 'collection'
          ? await coll.estimatedDocumentCount({ maxTimeMS: 5_000 }).catch(() => null)
          : null;
      const columns = inferColumns(sample);
      tables.push({
        name: info.name,
        kind: info.type === 'view' ? 'view' : 'collection',
        columns,
        primaryKey: columns.some((c) => c.name === '_id') ? ['_id'] : [],
        foreignKeys: [],
        rowEstimate: estimate,
      });
    }
    return { tables };
  }

  async function queryOn(
    q: MongoQuery,
    opts: QueryOptions,
    opened: (cursor: { close(): Promise<void> }) => void,
  ): Promise<QueryResult> {
    const started = performance.now();
    const deadline = Date.now() + opts.timeoutMs;
    await ready();
    const coll = db().collection(q.collection);
    const plan = mongoPlan(q, opts, deadline);
    const cursor =
      plan.kind === 'aggregate'
        ? coll.aggregate(plan.pipeline, plan.options)
        : coll.find(plan.filter, plan.options);
    opened(cursor);
    const collector = new RowCollector(opts.maxRows, opts.maxBytes);
    const columns: string[] = [];
    const seen = new Set<string>();
    try {
      for await (const doc of cursor) {
        const row = normalizeValue(doc) as Record<string, unknown>;
        if (!collector.add(row)) break;
        for (const k of Object.keys(row))
          if (!seen.has(k)) {
            seen.add(k);
            columns.push(k);
          }
      }
    } finally {
      await cursor.close().catch(() => {});
    }
    return {
      columns,
      rows: collector.rows,
      rowCount: collector.rows.length,
      executionTime: Math.round((performance.now() - started) * 100) / 100,
      ...(collector.truncated ? { truncated: true } : {}),
    };
  }
}
