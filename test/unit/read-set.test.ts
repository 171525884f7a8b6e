import { describe, expect, it } from 'vitest';
import type { ConnectionTarget } from '../../shared/databases/drivers/types';
import { judgedCalls, judgeReads, READS_PER_VERDICT, unionOf } from '../../shared/databases/read-set';
import { readOnlyViolation } from '../../shared/guard/errors';
import type { PgCalls } from '../../shared/guard/postgres-grammar';
import { verifyRead } from '../../shared/guard/read';

const target = { id: 'c1', version: '1', type: 'POSTGRES' } as ConnectionTarget;
const read = (table: string) => `SELECT substr("label", 1, 65) AS "v0" FROM "public"."${table}" LIMIT 1000`;
const callsOf = async (text: string) => (await verifyRead('POSTGRES', text)).pg as PgCalls;

/** A catalog that refuses any statement reading one of `bad`, counting the lookups. */
const catalog = (bad: string[]) => {
  const seen: string[][] = [];
  const check = async (calls: PgCalls) => {
    const rels = calls.relations.map((r) => r.name);
    seen.push(rels);
    const hit = rels.find((r) => bad.includes(r));
    if (hit) throw readOnlyViolation('FUNCTION', `Reading the table ${hit} runs owner code.`);
  };
  return { check, seen };
};

describe('judging reads together (read-set.ts)', () => {
  const tables = Array.from({ length: 20 }, (_, i) => `t${i}`);

  it('judges every allowed read in one lookup, all sharing one cover', async () => {
    const c = catalog([]);
    const verdicts = await judgeReads(target, tables.map(read), c.check);
    expect(c.seen).toHaveLength(1);
    expect(new Set(c.seen[0])).toEqual(new Set(tables));
    expect(verdicts.every((v) => v.ok && v.cover === (verdicts[0] as { cover: unknown }).cover)).toBe(true);
  });

  it('halves a refused union down to the refused reads; the others stay allowed', async () => {
    const c = catalog(['t3', 't17']);
    const verdicts = await judgeReads(target, tables.map(read), c.check);
    expect(verdicts.map((v, i) => (v.ok ? null : tables[i])).filter(Boolean)).toEqual(['t3', 't17']);
    const refused = verdicts[3];
    expect(refused.ok ? '' : refused.error.message).toBe('Reading the table t3 runs owner code.');
    expect(c.seen.length).toBeLessThanOrEqual(1 + 2 * 2 * Math.ceil(Math.log2(tables.length)));
    // Every allowed read's cover was itself allowed: it holds no refused table.
    for (const v of verdicts)
      if (v.ok) expect(v.cover?.pg.relations.map((r) => r.name)).not.toEqual(expect.arrayContaining(['t3']));
  });

  it('refuses alone a statement the guard refuses by its text, and judges the rest', async () => {
    const c = catalog([]);
    const verdicts = await judgeReads(target, [read('a'), 'DELETE FROM a', read('b')], c.check);
    expect(verdicts.map((v) => v.ok)).toEqual([true, false, true]);
    expect(c.seen).toEqual([['a', 'b']]);
  });

  it('leaves reads unjudged when a lookup fails for another reason than a refusal', async () => {
    const verdicts = await judgeReads(target, [read('a'), read('b')], async () => {
      throw new Error('connection lost');
    });
    expect(verdicts).toEqual([{ ok: true }, { ok: true }]);
  });

  it('judges at most READS_PER_VERDICT reads per lookup', async () => {
    const c = catalog([]);
    const many = Array.from({ length: READS_PER_VERDICT + 1 }, (_, i) => read(`m${i}`));
    await judgeReads(target, many, c.check);
    expect(c.seen.map((s) => s.length)).toEqual([READS_PER_VERDICT, 1]);
  });

  it('uses a cover only for a statement whose names it holds all of', async () => {
    const cover = unionOf(await Promise.all([read('a'), read('b')].map(callsOf)));
    const inside = await callsOf(read('b'));
    expect(judgedCalls(inside, cover)).toBe(cover.pg);
    // Another table, another function, a field name, an operator, a type: judged on its own names.
    for (const text of [
      read('c'),
      'SELECT upper("label") FROM "public"."a"',
      'SELECT x.owner_fn FROM "public"."a" x',
      'SELECT 1 FROM "public"."a" WHERE "label" = \'x\'',
      'SELECT "label"::public.mytype FROM "public"."a"',
    ]) {
      const own = await callsOf(text);
      expect(judgedCalls(own, cover), text).toBe(own);
    }
    expect(judgedCalls(inside, undefined)).toBe(inside);
  });
});
