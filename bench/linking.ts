import { existsSync } from 'node:fs';
import pg from 'pg';
import { generateKey } from '../shared/auth/key-material';
import { setSchemaContextBuilder } from '../shared/chat/assistant';
import { buildSchemaContext } from '../shared/chat/schema-context';
import { listAnnotationsOf } from '../shared/connections/annotations';
import { runAutoAnnotation } from '../shared/connections/auto-annotate';
import { refreshEmbeddingIndex } from '../shared/connections/embedding-index';
import { loadSchema } from '../shared/connections/schema-store';
import { closeAllDrivers } from '../shared/databases/drivers/index';
import { resetConfig } from '../shared/platform/config';
import { addBalance } from '../shared/usage/balance';
import { startPostgres } from '../test/support/databases';
import { type FakeOpenAI, type RecordedRequest, startFakeOpenAI } from '../test/support/fake-openai';
import { startTestServer, type TestServer } from '../test/support/server';
import type { BenchModule } from './context';
import {
  CORPUS_DIR,
  loadDump,
  loadSpider,
  type Question,
  questions,
  spiderSchemas,
  sqlEvalDatabases,
  tablesBySchema,
} from './linking-data';
import { describes, loadSingleBenches, type SingleBench, singleReport } from './linking-single';
import { REVISIONS, revisionFile } from './revision';

/** Target: questions whose first request describes every table of the reference SQL. */
export const RECALL_TARGET = 0.9;
/** Target: the first request's JSON at most this many bytes. */
export const PROMPT_TARGET_BYTES = 40_000;

/** Target: ranking (choosing and rendering the first request's tables) per question on ~1,000 tables. */
export const RANKING_TARGET_MS = 50;
/** Target on the held-out halves of the single-schema benchmarks. */
export const SINGLE_RECALL_TARGET = 0.95;

/** `--subset`: Spider distractor databases kept and every n-th question asked. */
const SUBSET_SPIDER_DBS = 40;
const SUBSET_EVERY = 4;

interface Outcome {
  recalled: boolean;
  missing: string[];
  bytes: number;
  calls: number;
}

/**
 * The scripted model for one question: reads the first request; when a table of the reference SQL is
 * not described it asks describe_tables for exactly those (the best a model could do: it knows the
 * names) and then answers; otherwise it answers at once. So calls per question are 1 plus the lookups.
 */
async function ask(s: TestServer, fake: FakeOpenAI, connectionId: string, q: Question): Promise<Outcome> {
  fake.reset();
  let first: RecordedRequest | undefined;
  let missing: string[] = [];
  fake.script(
    (req) => {
      first = req;
      const system = req.body.messages[0].content as string;
      missing = q.tables.filter((t) => !describes(system, t));
      return missing.length
        ? { toolCalls: [{ name: 'describe_tables', arguments: { tables: missing } }] }
        : { content: 'Answered from the described tables.' };
    },
    { content: 'Answered after looking the tables up.' },
  );
  const r = await s.call('POST', '/chat', { body: { message: q.question, connectionId } });
  if (r.status !== 200) {
    // Counted as a miss and listed, so one failure does not lose the run's figures.
    fake.reset();
    return {
      recalled: false,
      missing: [`(chat answered ${r.status}: ${r.text.slice(0, 200)})`],
      bytes: 0,
      calls: 0,
    };
  }
  const calls = fake.requests.filter((x) => x.path === '/v1/chat/completions').length;
  fake.reset();
  if (!first) throw new Error('no model request');
  return { recalled: missing.length === 0, missing, bytes: Buffer.byteLength(first.raw), calls };
}

export const linking: BenchModule = {
  name: 'linking',
  description:
    'schema linking: sql-eval questions over 167 schemas through POST /chat with a scripted model (retrieval before issue 16 vs now), then sql-eval and Spider dev with every table in one schema (first requests, tuning and held-out halves)',
  async run() {
    const subset = process.argv.includes('--subset');
    // Tuning aids: `--single-only` skips the multi-schema run; `--linking-cache` keeps the loaded
    // single-schema warehouses (tables and annotations) in .tmp/ between runs.
    const singleOnly = process.argv.includes('--single-only');
    const cacheDir = process.argv.includes('--linking-cache') ? '.tmp/linking-cache' : undefined;
    if (singleOnly) return singleOnlyRun(cacheDir);
    // The retrieval before, as it was at its commit (bench/revision.ts).
    const before = revisionFile(REVISIONS.linkingBefore);
    if (!before.file) throw new Error(`The retrieval before cannot be read: ${before.reason}.`);
    const { buildSchemaContext: buildSchemaContextBefore } = (await import(before.file)) as {
      buildSchemaContext: typeof buildSchemaContext;
    };
    const started = Date.now();
    const pgServer = await startPostgres();
    const admin = new pg.Client({
      host: pgServer.host,
      port: pgServer.port,
      user: pgServer.adminUser,
      password: pgServer.adminPassword,
      database: pgServer.database,
    });
    let server: TestServer | undefined;
    let fake: FakeOpenAI | undefined;
    try {
      await admin.connect();
      const evalDbs = sqlEvalDatabases();
      if (!evalDbs.length) throw new Error('The sql-eval corpus was not found: set LOUPE_BENCH_CORPUS.');
      let rows = 0;
      for (const db of evalDbs) rows += await loadDump(admin, db, `${CORPUS_DIR}/schemas/${db}.sql`);
      const spider = spiderSchemas().slice(0, subset ? SUBSET_SPIDER_DBS : undefined);
      for (const [db, tables] of spider) await loadSpider(admin, db, tables);
      const schemas = [...evalDbs, ...spider.map(([db]) => db)];
      await admin.query(
        `GRANT USAGE ON SCHEMA ${schemas.map((s) => `"${s}"`).join(', ')} TO ${pgServer.user}`,
      );
      for (const s of schemas)
        await admin.query(`GRANT SELECT ON ALL TABLES IN SCHEMA "${s}" TO ${pgServer.user}`);
      await admin.query('ANALYZE');
      const known = await tablesBySchema(admin, schemas);
      const tableCount = [...known.values()].reduce((n, s) => n + s.size, 0);
      const { questions: all, skipped } = questions(
        new Map(evalDbs.map((db) => [db, known.get(db) ?? new Set()])),
      );
      const asked = subset ? all.filter((_, i) => i % SUBSET_EVERY === 0) : all;

      // Phase 1, no model: introspection and automatic annotation (deterministic, with sampled values).
      const adminKey = generateKey();
      server = await startTestServer({ adminKey });
      const created = await server.call('POST', '/connections', {
        body: {
          name: 'Warehouse',
          type: 'POSTGRES',
          host: pgServer.host,
          port: pgServer.port,
          database: pgServer.database,
          username: pgServer.user,
          password: pgServer.password,
        },
      });
      if (created.status !== 201) throw new Error(created.text);
      const connectionId = created.body.data.id as string;
      const test = await server.call('POST', `/connections/${connectionId}/test`);
      if (!test.body.data?.success) throw new Error(test.text);
      const { orgId, adminUserId } = server.app;
      const introspected = Date.now();
      const summary = await runAutoAnnotation({
        orgId,
        connectionId,
        tables: null,
        requestedBy: adminUserId,
        requestedAt: new Date().toISOString(),
      });
      const annotatedMs = Date.now() - introspected;
      const single = await loadSingleBenches(pgServer, server, cacheDir);
      const dataDir = server.dataDir;
      await server.stop({ keepData: true });
      server = undefined;
      await closeAllDrivers();

      // Phase 2: the same data with the scripted model.
      fake = await startFakeOpenAI();
      server = await startTestServer({
        dataDir,
        adminKey,
        env: {
          OPENAI_API_KEY: fake.apiKey,
          OPENAI_BASE_URL: fake.url,
          LOUPE_MODEL: 'bench-model',
          LOUPE_AI_RATE_LIMIT: '1000000',
          LOUPE_ORG_RATE_LIMIT: '1000000',
          LOUPE_LOG_LEVEL: 'ERROR',
        },
      });
      await addBalance(orgId, adminUserId, 1e9);

      const runs: Array<{ label: string; outcomes: Outcome[]; ms: number }> = [];
      for (const [label, builder] of [
        ['before (word overlap, 30 tables)', buildSchemaContextBefore],
        ['after (BM25, joins, values, token budget)', buildSchemaContext],
      ] as const) {
        setSchemaContextBuilder(builder);
        const t0 = Date.now();
        const outcomes: Outcome[] = [];
        for (const q of asked) outcomes.push(await ask(server, fake, connectionId, q));
        runs.push({ label, outcomes, ms: Date.now() - t0 });
      }
      setSchemaContextBuilder(buildSchemaContext);

      // The same retrieval fused with the optional embedding index, against the test model server's
      // /v1/embeddings (hashed character trigrams: a toy model, so this row measures the mechanism and its
      // cost in time, not what a real embedding model would find).
      process.env.LOUPE_EMBEDDING_MODEL = 'bench-trigram';
      process.env.LOUPE_EMBEDDING_DIMENSIONS = '256';
      resetConfig();
      const cached = await loadSchema(orgId, connectionId);
      const i0 = Date.now();
      const built = await refreshEmbeddingIndex(
        { orgId, userId: adminUserId },
        connectionId,
        cached?.schema.tables ?? [],
        () => listAnnotationsOf(orgId, connectionId),
      );
      const indexMs = Date.now() - i0;
      if (!built?.embedded) throw new Error('The embedding index was not built.');
      const t1 = Date.now();
      const fused: Outcome[] = [];
      for (const q of asked) fused.push(await ask(server, fake, connectionId, q));
      runs.push({
        label: 'after + embeddings (added matches, trigram test model)',
        outcomes: fused,
        ms: Date.now() - t1,
      });
      delete process.env.LOUPE_EMBEDDING_MODEL;
      delete process.env.LOUPE_EMBEDDING_DIMENSIONS;
      resetConfig();

      const over: string[] = [];
      const rowsOut = runs.map(({ label, outcomes, ms }) => {
        const n = outcomes.length;
        const recalled = outcomes.filter((o) => o.recalled).length;
        const bytes = outcomes.map((o) => o.bytes);
        const mean = bytes.reduce((a, b) => a + b, 0) / n;
        const max = Math.max(...bytes);
        const calls = outcomes.reduce((a, o) => a + o.calls, 0) / n;
        const isAfter = label.startsWith('after');
        const recallOk = recalled / n >= RECALL_TARGET;
        const sizeOk = max <= PROMPT_TARGET_BYTES;
        if (isAfter && !recallOk) over.push(`linking: recall ${pct(recalled / n)} < ${pct(RECALL_TARGET)}`);
        if (isAfter && !sizeOk)
          over.push(`linking: largest first prompt ${kb(max)} > ${kb(PROMPT_TARGET_BYTES)}`);
        return [
          label,
          `${pct(recalled / n)} (${recalled}/${n})${isAfter && !recallOk ? ' ✗' : ''}`,
          kb(mean),
          `${kb(max)}${isAfter && !sizeOk ? ' ✗' : ''}`,
          calls.toFixed(2),
          `${(ms / n).toFixed(0)} ms`,
        ];
      });
      const after = runs[1].outcomes;
      const misses = asked
        .map((q, i) => ({ q, o: after[i] }))
        .filter(({ o }) => !o.recalled)
        .slice(0, 8)
        .map(({ q, o }) => `  - [${q.db}] ${q.question} — missing ${o.missing.join(', ')}`);
      const singleTable = singleSection(single);
      over.push(...singleTable.over);
      return {
        head: [
          'retrieval',
          'recall (first prompt)',
          'mean prompt',
          'largest prompt',
          'model calls / question',
          'time / question',
        ],
        rows: rowsOut,
        notes: [
          `${subset ? 'Subset' : 'Full run'}: ${tableCount} tables in ${schemas.length} schemas of one PostgreSQL database (${evalDbs.length} sql-eval databases with ${rows.toLocaleString('en-US')} rows, ${spider.length} Spider schemas without rows); ${asked.length} questions (questions_gen_postgres.csv on those databases; ${skipped} skipped: reference SQL not parsable). Automatic annotation (deterministic, sampled values): ${summary.tables} tables in ${(annotatedMs / 1000).toFixed(0)} s. Set-up ${((Date.now() - started) / 1000).toFixed(0)} s in all.`,
          `Embeddings row: ${built.embedded} tables embedded in ${(indexMs / 1000).toFixed(1)} s (256 dimensions, test model server); time per question includes embedding the question.`,
          'Recall: the first model request describes every table of the reference SQL with its columns (named only in "Other tables" does not count). Prompt: bytes of that request (system prompt, question, tool definitions). The scripted model asks describe_tables for the missing tables, then answers: calls per question = 1 + lookups. Measures retrieval only, not the answers of any real model.',
          ...(misses.length ? ['Missed (after), first ones:', ...misses] : []),
          ...singleTable.notes,
        ],
        overTarget: over,
      };
    } finally {
      delete process.env.LOUPE_EMBEDDING_MODEL;
      delete process.env.LOUPE_EMBEDDING_DIMENSIONS;
      resetConfig();
      setSchemaContextBuilder(buildSchemaContext);
      await server?.stop();
      await fake?.stop();
      await closeAllDrivers();
      await admin.end().catch(() => {});
      await pgServer.stop();
    }
  },
};

/** The single-schema benchmarks as a second table in the notes (see bench/linking-single.ts). */
function singleSection(single: { benches: SingleBench[]; missing: string[] }) {
  const r = singleReport(single.benches, {
    recall: SINGLE_RECALL_TARGET,
    bytes: PROMPT_TARGET_BYTES,
    ms: RANKING_TARGET_MS,
  });
  const head = SINGLE_HEAD;
  const table = [head, head.map(() => '---'), ...r.rows].map((row) => `| ${row.join(' | ')} |`).join('\n');
  return {
    over: r.over,
    notes: [
      `Single schema (every database's tables side by side in one schema; questions split once by SHA-256 of their text into tuning and held-out halves; targets: held-out first-request recall ≥ ${pct(SINGLE_RECALL_TARGET)}, request ≤ ${kb(PROMPT_TARGET_BYTES)}, ranking ≤ ${RANKING_TARGET_MS} ms):`,
      table,
      ...r.notes,
      ...single.missing,
    ],
  };
}

const SINGLE_HEAD = [
  'benchmark, half',
  'recall (first request)',
  'recall after one search_schema',
  'mean request',
  'largest request',
  'ranking time / question',
];

async function singleOnlyRun(cacheDir: string | undefined) {
  let single: { benches: SingleBench[]; missing: string[] };
  if (cacheDir && existsSync(`${cacheDir}/linking-single.json`))
    single = await loadSingleBenches(undefined as never, undefined as never, cacheDir);
  else {
    const pgServer = await startPostgres();
    const server = await startTestServer({ adminKey: generateKey() });
    try {
      single = await loadSingleBenches(pgServer, server, cacheDir);
    } finally {
      await server.stop();
      await closeAllDrivers();
      await pgServer.stop();
    }
  }
  const r = singleReport(single.benches, {
    recall: SINGLE_RECALL_TARGET,
    bytes: PROMPT_TARGET_BYTES,
    ms: RANKING_TARGET_MS,
  });
  return { head: SINGLE_HEAD, rows: r.rows, notes: [...r.notes, ...single.missing], overTarget: r.over };
}

const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
const kb = (n: number) => `${(n / 1000).toFixed(1)} KB`;
