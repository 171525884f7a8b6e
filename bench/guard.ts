import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { DbType } from '../shared/databases/drivers/types';
import { assertPgCallsAllowed } from '../shared/guard/postgres-catalog';
import { assertReadOnly, verifyRead } from '../shared/guard/read';
import { checkWithSqlparser, loadSqlparser, type SqlparserDialect } from '../shared/guard/sqlparser';
import { type DbServer, startMariadb, startPostgres } from '../test/support/databases';
import type { BenchModule } from './context';
import {
  type CorpusDialect,
  type CorpusStatement,
  corpusDir,
  corpusSchemas,
  corpusStatements,
  mariadbValidator,
  postgresValidator,
  sqliteValidator,
  type Validator,
} from './guard-corpus';
import { REVISIONS, revisionFile } from './revision';

/** Where `GUARD_CORPUS_WRITE=1 npm run bench -- --only guard` writes the accepted statements for the regression test. */
export const CORPUS_FIXTURE = join('test', 'fixtures', 'guard-corpus.json');

export interface CorpusFixture {
  note: string;
  dialects: Record<string, { statements: string[]; maxRefused: number }>;
}

const TARGET_MS = 0.5;
const targetRate: Record<CorpusDialect, number> = {
  POSTGRES: 0,
  MARIADB: 0.001,
  SQLITE: 0.001,
  MSSQL: 0.001,
};
const sqlparserDialect: Record<CorpusDialect, SqlparserDialect | undefined> = {
  POSTGRES: undefined,
  MARIADB: 'mysql',
  SQLITE: 'sqlite',
  MSSQL: 'mssql',
};

const median = (xs: number[]) => {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
};

/** Refusals and per-statement times of one guard over the statements (each text checked once). */
async function measure(
  statements: string[],
  check: (sql: string) => Promise<unknown> | unknown,
): Promise<{ refused: string[]; ms: number[] }> {
  const refused: string[] = [];
  const ms: number[] = [];
  for (const sql of statements) {
    const t = performance.now();
    try {
      await check(sql);
    } catch {
      refused.push(sql);
    }
    ms.push(performance.now() - t);
  }
  return { refused, ms };
}

const pct = (n: number, d: number) => (d ? `${((100 * n) / d).toFixed(2)}%` : '-');

export const guard: BenchModule = {
  name: 'guard',
  description:
    'Read-only guard on a public corpus of valid reads (sql-eval reference SQL, kept where the real database accepts EXPLAIN): refusals and median guard time, before (node-sql-parser, deny list) and after (libpg-query / node-sql-parser + sqlparser-rs, allow lists)',
  async run() {
    const dir = corpusDir();
    if (!dir)
      return {
        head: ['dialect'],
        rows: [],
        notes: ['No corpus found: put it at ../shared/corpus (beside the clone) or set LOUPE_CORPUS_DIR.'],
        overTarget: ['guard: corpus not found'],
      };
    const schemas = corpusSchemas(dir);
    const servers: DbServer[] = [];
    const validators: Partial<Record<CorpusDialect, Validator>> = {};
    const rows: string[][] = [];
    const notes: string[] = [];
    const overTarget: string[] = [];
    const fixture: CorpusFixture = {
      note: 'Valid reads of the public corpus (../shared/corpus) the real databases accept with EXPLAIN; regenerate with GUARD_CORPUS_WRITE=1 npm run bench -- --only guard. maxRefused is the refusal count reached; test/unit/guard-corpus.test.ts keeps it from growing.',
      dialects: {},
    };
    try {
      const pgServer = await startPostgres();
      servers.push(pgServer);
      validators.POSTGRES = await postgresValidator(pgServer, schemas);
      const maria = await startMariadb();
      if (maria) {
        servers.push(maria);
        validators.MARIADB = await mariadbValidator(maria, schemas);
      } else notes.push('MariaDB is not installed here: its row is missing.');
      validators.SQLITE = await sqliteValidator(schemas);
      // The guard before, as it was at its commit (bench/revision.ts).
      const before = revisionFile(REVISIONS.guardBefore);
      if (!before.file) throw new Error(`The guard before cannot be read: ${before.reason}.`);
      const { assertReadOnly: assertReadOnlyBefore } = (await import(before.file)) as {
        assertReadOnly: (type: DbType, sql: string) => Promise<unknown>;
      };
      // Load every parser before timing.
      await loadSqlparser();
      for (const t of ['POSTGRES', 'MARIADB', 'SQLITE', 'MSSQL'] as DbType[]) {
        await assertReadOnly(t, 'SELECT 1 AS warm').catch(() => undefined);
        await assertReadOnlyBefore(t, 'SELECT 1 AS warm').catch(() => undefined);
      }

      for (const dialect of ['POSTGRES', 'MARIADB', 'SQLITE', 'MSSQL'] as CorpusDialect[]) {
        const candidates = corpusStatements(dir, dialect);
        const validator = validators[dialect];
        let accepted: CorpusStatement[];
        if (validator) {
          accepted = [];
          for (const s of candidates) if (await validator.accepts(s)) accepted.push(s);
        } else if (dialect === 'MSSQL') accepted = candidates.filter((s) => schemas.has(s.db));
        else continue;
        const texts = accepted.map((s) => s.sql);
        const old = await measure(texts, (sql) => assertReadOnlyBefore(dialect, sql));
        const after = await measure(texts, (sql) => assertReadOnly(dialect, sql));
        // PostgreSQL's function rule also asks the server's catalog (untimed: one lookup per new name
        // per connection, then remembered); its refusals count as refusals after.
        const catalog = validator?.catalog;
        const catalogRefusals: string[] = [];
        // Each statement's names resolve in its own database's schema (the connection's search path).
        if (dialect === 'POSTGRES' && catalog)
          for (const s of accepted) {
            if (after.refused.includes(s.sql)) continue;
            const read = await verifyRead('POSTGRES', s.sql);
            await validator?.use?.(s.db);
            if (read.pg)
              await assertPgCallsAllowed(
                { id: `bench-corpus-${s.db}`, version: '1' },
                read.pg,
                catalog,
              ).catch((e: Error) => {
                after.refused.push(s.sql);
                catalogRefusals.push(`${e.message.slice(0, 200)} | ${s.sql.slice(0, 120)}`);
              });
          }
        const spDialect = sqlparserDialect[dialect];
        const sqlparserAlone = spDialect
          ? (await measure(texts, (sql) => checkWithSqlparser(spDialect, sql))).refused.length
          : undefined;
        const label =
          dialect === 'MSSQL'
            ? 'MSSQL (not validated: no SQL Server here)'
            : dialect === 'MARIADB'
              ? 'MariaDB'
              : dialect;
        const afterMedian = median(after.ms);
        rows.push([
          label,
          `${candidates.length}`,
          `${texts.length}`,
          `${old.refused.length} (${pct(old.refused.length, texts.length)})`,
          median(old.ms).toFixed(3),
          sqlparserAlone === undefined ? '-' : `${sqlparserAlone} (${pct(sqlparserAlone, texts.length)})`,
          `${after.refused.length} (${pct(after.refused.length, texts.length)})`,
          afterMedian.toFixed(3),
        ]);
        if (dialect !== 'MSSQL') {
          if (after.refused.length > targetRate[dialect] * texts.length)
            overTarget.push(`guard ${label}: ${after.refused.length} valid reads refused`);
          if (afterMedian > TARGET_MS) overTarget.push(`guard ${label}: median ${afterMedian.toFixed(3)} ms`);
        }
        for (const r of catalogRefusals.slice(0, 5)) notes.push(`${label} refused by the catalog rule: ${r}`);
        for (const sql of after.refused.slice(0, 5))
          notes.push(`${label} still refused: ${sql.replace(/\s+/g, ' ').slice(0, 160)}`);
        fixture.dialects[dialect] = { statements: texts, maxRefused: after.refused.length };
      }
    } finally {
      for (const v of Object.values(validators)) await v?.close().catch(() => undefined);
      for (const s of servers) await s.stop().catch(() => undefined);
    }
    if (process.env.GUARD_CORPUS_WRITE === '1') {
      writeFileSync(CORPUS_FIXTURE, `${JSON.stringify(fixture, null, 2)}\n`);
      notes.push(`Wrote ${CORPUS_FIXTURE}.`);
    }
    notes.push(
      'Candidates: distinct statements of the corpus files (answers separated by ; split); valid: accepted by EXPLAIN on the corpus schemas (queries on databases without a schema in the corpus are dropped). Times are per statement, first check (no memo hit); the PostgreSQL time excludes the catalog rule (one query per statement not yet judged under the same catalog version: every function its names, views, policies, domains, casts and types reach), whose refusals are counted. "sqlparser-rs alone": its parse and read classification without the token checks.',
    );
    return {
      head: [
        'dialect',
        'candidates',
        'valid reads',
        'refused before',
        'before median ms',
        'sqlparser-rs alone refused',
        'refused after',
        'after median ms',
      ],
      rows,
      notes,
      overTarget,
    };
  },
};
