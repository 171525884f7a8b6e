import type { A_Expr_Kind, SubLinkType } from '@pgsql/types';
import { beforeAll, describe, expect, it } from 'vitest';
import { pgDenied, pgDeniedPattern } from '../../shared/guard/functions';
import { writtenNames } from '../../shared/guard/postgres-catalog';
import { loadPgParser, type PgCalls, type PgName } from '../../shared/guard/postgres-grammar';
import { verifyRead } from '../../shared/guard/read';

/**
 * Issue 32, point 1: the names the PostgreSQL grammar walk gives the catalog rule. Every place the
 * grammar applies an operator is listed, each A_Expr kind and SubLink type of libpg-query's tree by
 * name (a kind added by a later parser fails here until it is handled).
 */
const names = async (sql: string): Promise<PgCalls> => {
  const read = await verifyRead('POSTGRES', sql);
  if (!read.pg) throw new Error('no names');
  return read.pg;
};
const ops = async (sql: string) => (await names(sql)).operators;

beforeAll(loadPgParser);

/** One statement per A_Expr kind, and the operators PostgreSQL applies for it. */
const aExprKinds: Record<A_Expr_Kind, [string, PgName[]]> = {
  AEXPR_OP: ['SELECT 1 + 2', [{ name: '+' }]],
  AEXPR_OP_ANY: ['SELECT 1 = ANY (ARRAY[1])', [{ name: '=' }]],
  AEXPR_OP_ALL: ['SELECT 1 < ALL (ARRAY[1])', [{ name: '<' }]],
  AEXPR_DISTINCT: ['SELECT 1 IS DISTINCT FROM 2', [{ name: '=' }]],
  AEXPR_NOT_DISTINCT: ['SELECT 1 IS NOT DISTINCT FROM 2', [{ name: '=' }]],
  AEXPR_NULLIF: ['SELECT NULLIF(1, 2)', [{ name: '=' }]],
  AEXPR_IN: ['SELECT 1 NOT IN (1, 2)', [{ name: '<>' }]],
  AEXPR_LIKE: ["SELECT 'a' NOT LIKE 'b'", [{ name: '!~~' }]],
  AEXPR_ILIKE: ["SELECT 'a' ILIKE 'b'", [{ name: '~~*' }]],
  AEXPR_SIMILAR: ["SELECT 'a' SIMILAR TO 'b'", [{ name: '~' }]],
  AEXPR_BETWEEN: ['SELECT 2 BETWEEN 1 AND 3', [{ name: '>=' }, { name: '<=' }]],
  AEXPR_NOT_BETWEEN: ['SELECT 2 NOT BETWEEN 1 AND 3', [{ name: '<' }, { name: '>' }]],
  AEXPR_BETWEEN_SYM: ['SELECT 2 BETWEEN SYMMETRIC 3 AND 1', [{ name: '>=' }, { name: '<=' }]],
  AEXPR_NOT_BETWEEN_SYM: ['SELECT 2 NOT BETWEEN SYMMETRIC 3 AND 1', [{ name: '<' }, { name: '>' }]],
};

/**
 * SubLink types: the operator of ANY/ALL (IN (subquery) is = ANY); ROWCOMPARE, MULTIEXPR and CTE
 * sublinks exist only after parse analysis or in UPDATE; EXISTS, EXPR and ARRAY apply no operator.
 */
const subLinkTypes: Record<SubLinkType, [string, PgName[]] | 'not in a raw read'> = {
  ANY_SUBLINK: ["SELECT 'a' IN (SELECT 'b')", [{ name: '=' }]],
  ALL_SUBLINK: ['SELECT 1 <%%> ALL (SELECT 2)', [{ name: '<%%>' }]],
  EXISTS_SUBLINK: ['SELECT EXISTS (SELECT 1)', []],
  EXPR_SUBLINK: ['SELECT (SELECT 1)', []],
  ARRAY_SUBLINK: ['SELECT ARRAY(SELECT 1)', []],
  ROWCOMPARE_SUBLINK: 'not in a raw read',
  MULTIEXPR_SUBLINK: 'not in a raw read',
  CTE_SUBLINK: 'not in a raw read',
};

describe('operators the grammar applies (issue 32, point 1)', () => {
  for (const [kind, [sql, expected]] of Object.entries(aExprKinds))
    it(`${kind}: ${sql}`, async () => {
      expect(await ops(sql)).toEqual(expected);
    });

  for (const [kind, example] of Object.entries(subLinkTypes))
    it(`${kind}`, async () => {
      if (example === 'not in a raw read') return;
      const [sql, expected] = example;
      expect(await ops(sql)).toEqual(expected);
    });

  it.each([
    ['SELECT 1 <%%> ANY (SELECT 2)', [{ name: '<%%>' }]],
    ['SELECT 1 <%%> SOME (SELECT 2)', [{ name: '<%%>' }]],
    ['SELECT NOT (1 <%%> ALL (SELECT 2))', [{ name: '<%%>' }]],
    ['SELECT 1 NOT IN (SELECT 2)', [{ name: '=' }]],
    ['SELECT 1 OPERATOR(hidden.###) 2', [{ schema: 'hidden', name: '###' }]],
    ['SELECT 1 OPERATOR(hidden.###) ANY (SELECT 2)', [{ schema: 'hidden', name: '###' }]],
    ['SELECT 1 OPERATOR(pg_catalog.=) ANY (ARRAY[2])', [{ schema: 'pg_catalog', name: '=' }]],
    ['SELECT EXISTS (SELECT 1 WHERE 1 OPERATOR(hidden.###) 2)', [{ schema: 'hidden', name: '###' }]],
    ['SELECT count(*) FILTER (WHERE 1 OPERATOR(hidden.###) 2)', [{ schema: 'hidden', name: '###' }]],
    ["SELECT CASE 'a' WHEN 'b' THEN 1 END", [{ name: '=' }]],
    ["SELECT CASE WHEN 'a' > 'b' THEN 1 END", [{ name: '>' }]],
    ['SELECT * FROM a JOIN b USING (id)', [{ name: '=' }]],
    ['SELECT * FROM a NATURAL JOIN b', [{ name: '=' }]],
    ['SELECT x FROM t ORDER BY x USING >', [{ name: '>' }]],
    ['SELECT x FROM t ORDER BY x USING OPERATOR(s.<)', [{ schema: 's', name: '<' }]],
    ['SELECT (1, 2) < (SELECT 1, 2)', [{ name: '<' }]],
    ['SELECT ROW(1, 2) IS DISTINCT FROM ROW(1, 3)', [{ name: '=' }]],
    ['SELECT - x FROM t', [{ name: '-' }]],
    ['EXPLAIN SELECT 1 OPERATOR(hidden.###) 2', [{ schema: 'hidden', name: '###' }]],
  ] as [string, PgName[]][])('%s', async (sql, expected) => {
    expect(await ops(sql)).toEqual(expected);
  });

  it('applies no operator by name where PostgreSQL picks one through a type’s operator class', async () => {
    for (const sql of [
      'SELECT DISTINCT x FROM t ORDER BY x',
      'SELECT x FROM t GROUP BY x',
      'SELECT x FROM t UNION SELECT y FROM u',
      'SELECT greatest(1, 2), least(1, 2)',
      'SELECT x IS NULL, x IS TRUE FROM t',
    ])
      expect(await ops(sql), sql).toEqual([]);
  });
});

describe('functions, types and relations the catalog rule resolves', () => {
  it('keeps schemas, lists one-argument calls as possible casts, TABLESAMPLE methods as functions', async () => {
    const n = await names(
      "SELECT s.f(1), g(1, 2), lower('X'), 'x'::checked, CAST(1 AS app.money2), '{}'::checked[] FROM app.t TABLESAMPLE bernoulli (10)",
    );
    expect(n.functions).toEqual(
      expect.arrayContaining([
        { schema: 's', name: 'f' },
        { name: 'g' },
        { name: 'lower' },
        { name: 'bernoulli' },
      ]),
    );
    expect(n.types).toEqual(
      expect.arrayContaining([
        { schema: 's', name: 'f' },
        { name: 'lower' },
        { name: 'checked' },
        { schema: 'app', name: 'money2' },
      ]),
    );
    expect(n.types).not.toContainEqual({ name: 'g' });
    expect(n.relations).toEqual([{ schema: 'app', name: 't' }]);
  });

  it('finds every relation read and every type written, also in subqueries, CTEs and column definition lists', async () => {
    const n = await names(
      'WITH c AS (SELECT * FROM public.base) SELECT * FROM c JOIN v ON true, LATERAL (SELECT 1 FROM w) x, ROWS FROM (f(1)) AS r(a mytype) WHERE EXISTS (TABLE z)',
    );
    expect(n.relations).toEqual(
      expect.arrayContaining([
        { schema: 'public', name: 'base' },
        { name: 'c' },
        { name: 'v' },
        { name: 'w' },
        { name: 'z' },
      ]),
    );
    expect(n.types).toContainEqual({ name: 'mytype' });
  });

  it('gives the catalog one sorted list without repeats (the verdict’s key)', async () => {
    const a = writtenNames(await names("SELECT 'a' IN ('a', 'b'), x = 1 FROM t, t AS u"));
    const b = writtenNames(await names("SELECT x = 1, 'c' IN ('d') FROM t AS u, t"));
    // The literals' types are in play too (an owner's implicit cast from them may run, issue 43).
    expect(a).toEqual([
      ['o', null, '='],
      ['r', null, 't'],
      ['t', 'pg_catalog', 'int4'],
      ['t', 'pg_catalog', 'text'],
      ['t', 'pg_catalog', 'unknown'],
    ]);
    expect(b).toEqual(a);
  });
});

describe('the denied names as the catalog query matches them', () => {
  it('matches exactly the names pgDenied refuses', () => {
    const re = new RegExp(pgDeniedPattern());
    for (const name of [
      'dblink_exec',
      'dblink',
      'pg_advisory_lock',
      'pg_try_advisory_xact_lock',
      'set_config',
      'nextval',
      'pg_sleep_for',
      'lo_import',
      'query_to_xml_and_xmlschema',
      'pg_ls_dir',
      'txid_current_snapshot',
      'lower',
      'now',
      'similarity',
      'pg_relation_size',
      'current_setting',
      'xdblink',
    ])
      expect(re.test(name), name).toBe(pgDenied(name) !== undefined);
  });
});
