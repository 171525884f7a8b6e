/**
 * Strict mode's lock before the check (issue 43, the lock-wait race). A read's catalog check runs in its
 * transaction just before its statement; if the statement then waited on a lock (a table another session
 * holds), a view or function replaced and committed during that wait would run unjudged. So a strict
 * read first takes ACCESS SHARE on every relation its statement names (a view's lock takes its
 * relations' too, recursively), and only then runs the check: a change committed while it waited is seen
 * by the check (the read is judged again), and once the locks are held nobody can replace those views
 * or alter those tables until the read ends. Names that are not relations (a CTE) are skipped, as are
 * relations the role may not lock (the statement then fails on its own). Our own text: every name is a
 * quoted identifier inside string literals, read with standard_conforming_strings on (pinned before).
 */
import type { PgName } from './postgres-grammar';

const ident = (s: string) => `"${s.replace(/"/g, '""')}"`;
const literal = (s: string) => `'${s.replace(/'/g, "''")}'`;

/** The DO statement that locks `relations` in ACCESS SHARE mode (undefined when there are none). */
export function lockRelationsSql(relations: readonly PgName[]): string | undefined {
  const names = [
    ...new Set(relations.map((r) => (r.schema ? `${ident(r.schema)}.${ident(r.name)}` : ident(r.name)))),
  ].sort();
  if (names.length === 0) return undefined;
  const body = `DECLARE r pg_catalog.regclass; n pg_catalog.text;
BEGIN
  FOREACH n IN ARRAY ARRAY[${names.map(literal).join(', ')}]::pg_catalog.text[] LOOP
    r := pg_catalog.to_regclass(n);
    IF r IS NOT NULL THEN
      BEGIN
        EXECUTE pg_catalog.format('LOCK TABLE %s IN ACCESS SHARE MODE', r);
      EXCEPTION WHEN OTHERS THEN NULL;
      END;
    END IF;
  END LOOP;
END`;
  return `DO LANGUAGE plpgsql ${literal(body)}`;
}
