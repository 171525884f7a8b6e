import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { pgAllowedIdentity, pgExtensionVerdict } from '../../shared/guard/functions';
import {
  allowedIdentities,
  assertPgCallsAllowed,
  type CatalogQuery,
  forgetCatalogVerdicts,
  pgReadCheck,
  TIMED_OUT_MS,
} from '../../shared/guard/postgres-catalog';
import { REACH_SQL, SNAPSHOT_SQL, VERSION_SQL } from '../../shared/guard/postgres-catalog-sql';
import { checkPostgres, loadPgParser } from '../../shared/guard/postgres-grammar';
import { AppError } from '../../shared/platform/errors';

/**
 * Issue 43, strict mode: the catalog judgement (REACH_SQL) of one statement on one connection is run
 * once however many reads wait for it (single flight), and one that timed out answers the same 504
 * for TIMED_OUT_MS without asking the server again. allowedFunctions entries are SQL identifiers.
 */
const target = { id: 'c1', version: '1' };

/** A fake connection: counts the catalog queries; REACH_SQL answers `reach()` after `gate` opens. */
function fakeCatalog(reach: () => Promise<unknown[]>) {
  const counts = { reach: 0, version: 0, snapshot: 0 };
  const query: CatalogQuery = async (text) => {
    if (text === VERSION_SQL) {
      counts.version++;
      return { rows: [{ snapshot: '10:10:', hash: 'abc' }] };
    }
    if (text === SNAPSHOT_SQL) {
      counts.snapshot++;
      return { rows: [{ snapshot: '10:10:' }] };
    }
    if (text === REACH_SQL) {
      counts.reach++;
      return { rows: await reach() };
    }
    throw new Error(`unexpected query ${text.slice(0, 40)}`);
  };
  return { counts, query };
}

const deferred = () => {
  let open!: () => void;
  const gate = new Promise<void>((r) => {
    open = r;
  });
  return { gate, open };
};

const ownerFunction = {
  via: 'function',
  what: 'mark',
  level: 'call',
  expr: null,
  schema: 'public',
  fn: 'mark',
  volatility: 'i',
  language: 'plpgsql',
  owner_super: false,
  initdb: false,
  args: 'text',
  extension: null,
};

describe('single flight and remembered timeouts of the catalog judgement', () => {
  beforeAll(loadPgParser);
  beforeEach(forgetCatalogVerdicts);

  it('32 concurrent reads of one new statement send one REACH query and all get its verdict', async () => {
    const { gate, open } = deferred();
    const { counts, query } = fakeCatalog(async () => {
      await gate;
      return [];
    });
    const calls = checkPostgres('SELECT * FROM orders WHERE customer_id = 7');
    const reads = Array.from({ length: 32 }, () => pgReadCheck(target, calls, query));
    await new Promise((r) => setTimeout(r, 20));
    open();
    const checks = await Promise.all(reads);
    expect(counts.reach).toBe(1);
    // The connection's catalog version is read once for all of them too.
    expect(counts.version).toBe(1);
    expect(checks.every((c) => typeof c?.sql === 'string')).toBe(true);
    // Remembered: the next read asks nothing.
    await pgReadCheck(target, calls, query);
    expect(counts.reach).toBe(1);
  });

  it('shares a refusal too: every waiter gets its own 400 naming the function, and nothing is remembered', async () => {
    const { gate, open } = deferred();
    const { counts, query } = fakeCatalog(async () => {
      await gate;
      return [ownerFunction];
    });
    const calls = checkPostgres("SELECT mark('x')");
    const reads = Array.from({ length: 8 }, () => pgReadCheck(target, calls, query).catch((e) => e));
    open();
    const errors = await Promise.all(reads);
    expect(counts.reach).toBe(1);
    for (const e of errors) {
      expect(e).toBeInstanceOf(AppError);
      expect((e as AppError).status).toBe(400);
      expect((e as AppError).message).toContain('mark()');
    }
    expect(new Set(errors).size).toBe(8);
    await pgReadCheck(target, calls, query).catch(() => undefined);
    expect(counts.reach).toBe(2);
  });

  it('different statements, or another connection, are judged separately', async () => {
    const { counts, query } = fakeCatalog(async () => []);
    await Promise.all([
      pgReadCheck(target, checkPostgres('SELECT * FROM a'), query),
      pgReadCheck(target, checkPostgres('SELECT * FROM b'), query),
      pgReadCheck({ id: 'c2', version: '1' }, checkPostgres('SELECT * FROM a'), query),
    ]);
    expect(counts.reach).toBe(3);
  });

  it('a judgement that timed out answers the same 504 for a while without running again', async () => {
    const timeout = new AppError(
      504,
      'QUERY_TIMEOUT',
      'The query did not finish within 10 s and was cancelled.',
    );
    let fail = true;
    const { counts, query } = fakeCatalog(async () => {
      if (fail) throw timeout;
      return [];
    });
    const calls = checkPostgres('SELECT * FROM big');
    await expect(pgReadCheck(target, calls, query)).rejects.toBe(timeout);
    expect(counts.reach).toBe(1);
    fail = false;
    // Retries within TIMED_OUT_MS: the same answer, no query.
    for (let i = 0; i < 5; i++) await expect(pgReadCheck(target, calls, query)).rejects.toBe(timeout);
    await expect(assertPgCallsAllowed(target, calls, query)).rejects.toBe(timeout);
    expect(counts.reach).toBe(1);
    // Another statement on the connection is judged as usual.
    await pgReadCheck(target, checkPostgres('SELECT * FROM small'), query);
    expect(counts.reach).toBe(2);
    // After TIMED_OUT_MS the statement is judged again.
    const now = Date.now;
    Date.now = () => now() + TIMED_OUT_MS + 1;
    try {
      await pgReadCheck(target, calls, query);
    } finally {
      Date.now = now;
    }
    expect(counts.reach).toBe(3);
  });

  it('other failures are not remembered', async () => {
    let fail = true;
    const { counts, query } = fakeCatalog(async () => {
      if (fail) throw new AppError(422, 'QUERY_FAILED', 'boom');
      return [];
    });
    const calls = checkPostgres('SELECT * FROM x');
    await expect(pgReadCheck(target, calls, query)).rejects.toThrow('boom');
    fail = false;
    await pgReadCheck(target, calls, query);
    expect(counts.reach).toBe(2);
  });
});

describe('allowedFunctions by exact identity (issue 43)', () => {
  it('reads each entry as SQL identifiers', () => {
    expect(pgAllowedIdentity('mark')).toEqual({ name: 'mark' });
    expect(pgAllowedIdentity('Mark')).toEqual({ name: 'mark' });
    expect(pgAllowedIdentity('"Mark"')).toEqual({ name: 'Mark' });
    expect(pgAllowedIdentity('public."Mark"')).toEqual({ schema: 'public', name: 'Mark' });
    expect(pgAllowedIdentity('"My Schema".f')).toEqual({ schema: 'My Schema', name: 'f' });
    expect(pgAllowedIdentity('"a""b"')).toEqual({ name: 'a"b' });
    expect(pgAllowedIdentity('a.b.c')).toBeUndefined();
    expect(pgAllowedIdentity('"unterminated')).toBeUndefined();
    expect(pgAllowedIdentity('x; drop')).toBeUndefined();
  });

  it('allowing mark does not allow "Mark", and the other way round', async () => {
    await loadPgParser();
    const reached = (fn: string) => ({ ...ownerFunction, what: fn, fn });
    const judge = async (allowed: string[], fn: string) => {
      forgetCatalogVerdicts();
      const { query } = fakeCatalog(async () => [reached(fn)]);
      const calls = checkPostgres(`SELECT "${fn}"('x')`);
      return assertPgCallsAllowed({ ...target, allowedFunctions: allowed }, calls, query).then(
        () => 'allowed',
        (e: AppError) => e.status,
      );
    };
    expect(await judge(['mark'], 'mark')).toBe('allowed');
    expect(await judge(['MARK'], 'mark')).toBe('allowed');
    expect(await judge(['mark'], 'Mark')).toBe(400);
    expect(await judge(['"Mark"'], 'Mark')).toBe('allowed');
    expect(await judge(['"Mark"'], 'mark')).toBe(400);
    expect(await judge(['public."Mark"'], 'Mark')).toBe('allowed');
    expect(await judge(['other."Mark"'], 'Mark')).toBe(400);
    expect(allowedIdentities(['Mark', 'mark']).size).toBe(1);
  });
});

describe('reviewed extensions judged whole', () => {
  it('covers C and superuser SQL members, not plpgsql ones, and keeps the listed exceptions', () => {
    expect(pgExtensionVerdict('postgis', 'geography_eq', 'geography, geography', 'c', true)).toEqual({
      covered: true,
    });
    expect(pgExtensionVerdict('postgis', 'st_astext', 'text', 'sql', true)).toEqual({ covered: true });
    // SQL the owner added to the extension is not the extension's code.
    expect(pgExtensionVerdict('citext', 'mark', 'text', 'sql', false)).toBeUndefined();
    expect(pgExtensionVerdict('postgis', 'addgeometrycolumn', 'text', 'plpgsql', true)).toBeUndefined();
    expect(pgExtensionVerdict('pg_trgm', 'set_limit', 'real', 'c', true)).toHaveProperty('refused');
    expect(pgExtensionVerdict('tablefunc', 'crosstab', 'text', 'c', true)).toHaveProperty('refused');
    expect(
      pgExtensionVerdict('postgis_raster', '_st_valuecount', 'text, text, integer', 'c', true),
    ).toHaveProperty('refused');
    expect(
      pgExtensionVerdict('postgis_raster', 'st_mapalgebra', 'raster, integer, text', 'c', true),
    ).toHaveProperty('refused');
    expect(pgExtensionVerdict('postgis_raster', 'st_value', 'raster, integer, integer', 'c', true)).toEqual({
      covered: true,
    });
    expect(pgExtensionVerdict('dblink', 'dblink_exec', 'text, text', 'c', true)).toBeUndefined();
    expect(pgExtensionVerdict('postgis_topology', 'getnodebypoint', 'varchar', 'c', true)).toBeUndefined();
    expect(pgExtensionVerdict('timescaledb', 'time_bucket', 'interval, timestamptz', 'c', true)).toEqual({
      covered: true,
    });
    expect(pgExtensionVerdict('timescaledb', 'add_job', 'regproc', 'c', true)).toBeUndefined();
  });
});
