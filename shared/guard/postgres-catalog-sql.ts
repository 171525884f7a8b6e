/**
 * The catalog queries of the PostgreSQL function rule (postgres-catalog.ts), as one statement each.
 *
 * They run on the read's own path, whose search_path starts with pg_catalog (drivers/postgres.ts), and
 * are written so that nothing in them can resolve to an owner's object: every function, type and
 * table is qualified with pg_catalog, and every operator is applied to operands of exactly the types
 * of a pg_catalog operator (an exact match in the first schema of the path wins over any other).
 */

/** `pg_catalog.<table>` as an oid (the classid of pg_depend rows). */
const cls = (table: string) => `'pg_catalog.${table}'::pg_catalog.regclass::pg_catalog.oid`;
/** Objects created by initdb have oids below FirstNormalObjectId (16384); every later object above. */
const FIRST_NORMAL = '16384::pg_catalog.oid';
const ZERO = '0::pg_catalog.oid';
/** `schema.name`, each part quoted as needed. */
const qname = (schema: string, name: string) => `pg_catalog.format('%I.%I', ${schema}, ${name})`;
const relName = (oid: string) =>
  `(SELECT ${qname('rn.nspname', 'rc.relname')} FROM pg_catalog.pg_class rc JOIN pg_catalog.pg_namespace rn ON rn.oid = rc.relnamespace WHERE rc.oid = ${oid})`;
const typeName = (oid: string) => `pg_catalog.format_type(${oid}, NULL)`;
/** `schema.op(left, right)`: an operator as PostgreSQL names it. */
const opName = (oid: string) =>
  `(SELECT pg_catalog.format('%I.%s', on_.nspname, op_.oprname) || '(' || pg_catalog.format_type(op_.oprleft, NULL) || ', ' || pg_catalog.format_type(op_.oprright, NULL) || ')' FROM pg_catalog.pg_operator op_ JOIN pg_catalog.pg_namespace on_ ON on_.oid = op_.oprnamespace WHERE op_.oid = ${oid})`;
/**
 * The session's role skips the table's row-level security: a superuser or BYPASSRLS role, or the
 * table's owner (or a member inheriting its rights) when the table does not FORCE it. Only for a
 * table the statement names: through a view, policies apply as the view's owner.
 */
const bypassesRls = (c: string) =>
  `((SELECT a.rolsuper OR a.rolbypassrls FROM pg_catalog.pg_roles a WHERE a.rolname = CURRENT_USER)
     OR (NOT ${c}.relforcerowsecurity AND pg_catalog.pg_has_role(${c}.relowner, 'USAGE')))`;
/** Written names resolve in the session's effective path (pg_catalog first); pg_temp never for functions and operators. */
const inPath = (sch: string, nsp: string, pos: string, temp: boolean) =>
  `CASE WHEN ${sch} IS NULL THEN ${pos} IS NOT NULL${
    temp ? '' : ` AND NOT pg_catalog.starts_with(${nsp}::pg_catalog.text, 'pg_temp')`
  } ELSE ${nsp} = ${sch} END`;

/**
 * Everything a read of the written names could run, as one row per (reason, function) that is not an
 * initdb built-in marked IMMUTABLE or STABLE (those need no review; $2 is a regular expression of the
 * names refused whatever the catalog says, which are always returned). Parameters: $1 a JSON array of
 * [kind, schema | null, name] ('f' function, 'n' function called with named arguments, 'a' field
 * name, 'o' operator, 't' type, 'r' relation); $2 the denied-name expression.
 *
 * - Names resolve as the server resolves them: every overload in the path (or in the written schema),
 *   except one whose signature an earlier schema of the path already has (that one can never be
 *   chosen: pg_catalog's built-ins come first) unless the call names its arguments (named notation
 *   matches parameter names, which the earlier one may lack); relations and types: the first match
 *   in the path. A field name: every function of that name taking one argument of any type
 *   (`(1).f`, `(col).f` call f(int)).
 * - Relations read: the written ones, the relations of every view they read (recursively, through the
 *   views' SELECT rules) and of every row-level security policy that applies, and inheritance
 *   children and partitions; built-in relations (oid < 16384) are not followed. Of each: its view
 *   rule's functions and operators, its policies for SELECT when row security is enabled (not for a
 *   named table whose row security the session's role bypasses), the functions its index expressions
 *   and predicates, CHECK constraints, statistics expressions and partition key compute (the planner
 *   folds those with constant arguments, so IMMUTABLE ones run on a read: level 'fold'), the handler
 *   of a foreign table's wrapper and of its table access method.
 * - Types in play: the written ones, the column types of every relation read, the argument and result
 *   types of the functions and operators the names resolve to, the types the views and policies use,
 *   and (recursively, from types created after initdb: a built-in type leads only to built-ins)
 *   domains' base types, arrays and their elements, composite types' attribute types, ranges'
 *   subtypes. Of each type created after initdb: its input, output, send, receive, typmod and
 *   subscript functions, a range's canonical and subtype-difference functions, a domain's CHECK
 *   constraints. Every cast created after initdb with a function between two types in play (an
 *   implicit cast runs without being written; initdb's casts run initdb's functions), and the members
 *   added after initdb to the default btree and hash operator classes of the types in play (ORDER BY,
 *   GROUP BY, DISTINCT, UNION, joins).
 * - Operators: the function behind each (`oprcode`, level of the reason) and its selectivity
 *   estimators (level 'type'), and the same of its COMMUTATOR and NEGATOR, recursively (op_links: the
 *   planner negates `NOT (a op b)` and its estimators evaluate the commutator); also for the
 *   operators of views, policies, domain checks and folded expressions. Aggregates: every support
 *   function.
 *
 * Levels: 'call' (the function runs as written in the object), 'type' (type support, casts, operator
 * classes, handlers), 'fold' (runs only when the planner folds it).
 */
export const REACH_SQL = `
WITH RECURSIVE
written AS (
  SELECT e ->> 0 AS kind, e ->> 1 AS sch, e ->> 2 AS name
    FROM pg_catalog.jsonb_array_elements($1::pg_catalog.jsonb) AS e),
path AS (
  SELECT s.nsp::pg_catalog.text AS nsp, s.pos
    FROM pg_catalog.unnest(pg_catalog.current_schemas(true)) WITH ORDINALITY AS s(nsp, pos)),
fn_cand AS (
  SELECT w.kind, w.sch, w.name, p.oid, p.proargtypes, p.provariadic, p.pronargdefaults, x.pos
    FROM written w
    JOIN pg_catalog.pg_proc p ON p.proname = w.name
    JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
    LEFT JOIN path x ON x.nsp = n.nspname::pg_catalog.text
   WHERE (w.kind IN ('f', 'n') OR (w.kind = 'a' AND p.pronargs >= 1 AND p.pronargs - p.pronargdefaults <= 1
            AND p.proargtypes[0] <> 'pg_catalog.internal'::pg_catalog.regtype::pg_catalog.oid))
     AND ${inPath('w.sch', 'n.nspname', 'x.pos', false)}),
fn_used AS (
  SELECT c.* FROM fn_cand c
   WHERE c.sch IS NOT NULL OR c.kind = 'n' OR NOT EXISTS (
     SELECT 1 FROM fn_cand e
      WHERE e.sch IS NULL AND e.kind = c.kind AND e.name = c.name AND e.pos < c.pos
        AND e.proargtypes = c.proargtypes AND e.provariadic = c.provariadic
        AND e.pronargdefaults >= c.pronargdefaults)),
op_cand AS (
  SELECT w.sch, w.name, o.oid, o.oprleft, o.oprright, o.oprresult, x.pos
    FROM written w
    JOIN pg_catalog.pg_operator o ON o.oprname = w.name
    JOIN pg_catalog.pg_namespace n ON n.oid = o.oprnamespace
    LEFT JOIN path x ON x.nsp = n.nspname::pg_catalog.text
   WHERE w.kind = 'o' AND ${inPath('w.sch', 'n.nspname', 'x.pos', false)}),
op_used AS (
  SELECT c.* FROM op_cand c
   WHERE c.sch IS NOT NULL OR NOT EXISTS (
     SELECT 1 FROM op_cand e
      WHERE e.sch IS NULL AND e.name = c.name AND e.pos < c.pos
        AND e.oprleft = c.oprleft AND e.oprright = c.oprright)),
rel_written AS (
  SELECT DISTINCT ON (w.sch, w.name) c.oid
    FROM written w
    JOIN pg_catalog.pg_class c ON c.relname = w.name
    JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
    LEFT JOIN path x ON x.nsp = n.nspname::pg_catalog.text
   WHERE w.kind = 'r' AND ${inPath('w.sch', 'n.nspname', 'x.pos', true)}
   ORDER BY w.sch, w.name, x.pos),
rels(oid, top) AS (
  SELECT oid, oid FROM rel_written WHERE oid >= ${FIRST_NORMAL}
  UNION
  SELECT nx.oid, r.top FROM rels r, LATERAL (
    SELECT d.refobjid AS oid
      FROM pg_catalog.pg_class c
      JOIN pg_catalog.pg_rewrite rw ON rw.ev_class = c.oid AND rw.ev_type = '1'
      JOIN pg_catalog.pg_depend d ON d.classid = ${cls('pg_rewrite')} AND d.objid = rw.oid
     WHERE c.oid = r.oid AND c.relkind = 'v'
       AND d.refclassid = ${cls('pg_class')} AND d.refobjid <> r.oid
    UNION ALL
    SELECT i.inhrelid FROM pg_catalog.pg_inherits i WHERE i.inhparent = r.oid
    UNION ALL
    SELECT d.refobjid
      FROM pg_catalog.pg_class c
      JOIN pg_catalog.pg_policy pol ON pol.polrelid = c.oid AND pol.polcmd IN ('r', '*')
      JOIN pg_catalog.pg_depend d ON d.classid = ${cls('pg_policy')} AND d.objid = pol.oid
     WHERE c.oid = r.oid AND c.relrowsecurity
       AND d.refclassid = ${cls('pg_class')} AND d.refobjid <> r.oid) nx
   WHERE nx.oid >= ${FIRST_NORMAL}),
attached AS (
  SELECT 'view' AS via, r.oid AS rel, r.top, rw.oid AS obj, ${cls('pg_rewrite')} AS cls, 'call' AS level,
         NULL::pg_catalog.text AS objname, NULL::pg_catalog.text AS expr
    FROM rels r, LATERAL (
      SELECT rw.oid FROM pg_catalog.pg_class c
        JOIN pg_catalog.pg_rewrite rw ON rw.ev_class = c.oid AND rw.ev_type = '1'
       WHERE c.oid = r.oid AND c.relkind = 'v') rw
  UNION ALL
  SELECT 'policy', r.oid, r.top, pol.oid, ${cls('pg_policy')}, 'call', pol.polname::pg_catalog.text, NULL
    FROM rels r, LATERAL (
      SELECT pol.oid, pol.polname FROM pg_catalog.pg_class c
        JOIN pg_catalog.pg_policy pol ON pol.polrelid = c.oid AND pol.polcmd IN ('r', '*')
       WHERE c.oid = r.oid AND c.relrowsecurity AND (r.top <> r.oid OR NOT ${bypassesRls('c')})) pol
  UNION ALL
  SELECT 'index', r.oid, r.top, x.indexrelid, ${cls('pg_class')}, 'fold',
         (SELECT ic.relname::pg_catalog.text FROM pg_catalog.pg_class ic WHERE ic.oid = x.indexrelid),
         pg_catalog.pg_get_indexdef(x.indexrelid)
    FROM rels r, LATERAL (SELECT x.indexrelid FROM pg_catalog.pg_index x WHERE x.indrelid = r.oid) x
  UNION ALL
  SELECT 'check', r.oid, r.top, k.oid, ${cls('pg_constraint')}, 'fold', k.conname::pg_catalog.text,
         'SELECT ' || pg_catalog.pg_get_expr(k.conbin, k.conrelid)
    FROM rels r, LATERAL (
      SELECT k.oid, k.conname, k.conbin, k.conrelid FROM pg_catalog.pg_constraint k
       WHERE k.conrelid = r.oid AND k.contype = 'c') k
  UNION ALL
  SELECT 'statistics', r.oid, r.top, s.oid, ${cls('pg_statistic_ext')}, 'fold', s.stxname::pg_catalog.text,
         'SELECT ' || pg_catalog.array_to_string(pg_catalog.pg_get_statisticsobjdef_expressions(s.oid), ', ')
    FROM rels r, LATERAL (
      SELECT s.oid, s.stxname FROM pg_catalog.pg_statistic_ext s WHERE s.stxrelid = r.oid) s
  UNION ALL
  SELECT 'partition', r.oid, r.top, r.oid, ${cls('pg_class')}, 'fold', NULL,
         'CREATE TABLE loupe_key (c int) PARTITION BY ' || pg_catalog.pg_get_partkeydef(r.oid)
    FROM rels r),
attached_deps AS (
  SELECT a.via, a.rel, a.top, a.level, a.objname, a.expr, d.refclassid, d.refobjid
    FROM attached a, LATERAL (
      SELECT d.refclassid, d.refobjid FROM pg_catalog.pg_depend d
       WHERE d.classid = a.cls AND d.objid = a.obj AND d.objsubid = 0
         AND d.refclassid IN (${cls('pg_proc')}, ${cls('pg_operator')}, ${cls('pg_type')})) d),
op_links(root, oid) AS (
  SELECT u.oid, u.oid FROM op_used u
  UNION
  SELECT d.refobjid, d.refobjid FROM attached_deps d WHERE d.refclassid = ${cls('pg_operator')}
  UNION
  SELECT l.root, nx.oid FROM op_links l, LATERAL (
    SELECT o.oprcom::pg_catalog.oid AS oid FROM pg_catalog.pg_operator o WHERE o.oid = l.oid
    UNION ALL SELECT o.oprnegate::pg_catalog.oid FROM pg_catalog.pg_operator o WHERE o.oid = l.oid) nx
   WHERE nx.oid <> ${ZERO}),
type_written AS (
  SELECT DISTINCT ON (w.sch, w.name) t.oid
    FROM written w
    JOIN pg_catalog.pg_type t ON t.typname = w.name
    JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace
    LEFT JOIN path x ON x.nsp = n.nspname::pg_catalog.text
   WHERE w.kind = 't' AND ${inPath('w.sch', 'n.nspname', 'x.pos', true)}
   ORDER BY w.sch, w.name, x.pos),
types(oid) AS (
  SELECT oid FROM type_written
  UNION
  SELECT a.atttypid FROM rels r, LATERAL (
    SELECT a.atttypid FROM pg_catalog.pg_attribute a
     WHERE a.attrelid = r.oid AND a.attnum > 0 AND NOT a.attisdropped) a
  UNION
  SELECT pg_catalog.unnest(f.proargtypes::pg_catalog.oid[]) FROM fn_used f
  UNION
  SELECT p.prorettype FROM fn_used f, LATERAL (SELECT p.prorettype FROM pg_catalog.pg_proc p WHERE p.oid = f.oid) p
  UNION
  SELECT pg_catalog.unnest(ARRAY[u.oprleft, u.oprright, u.oprresult]) FROM op_used u
  UNION
  SELECT d.refobjid FROM attached_deps d WHERE d.refclassid = ${cls('pg_type')}
  UNION
  SELECT nx.oid FROM types t, LATERAL (
    SELECT y.typbasetype AS oid FROM pg_catalog.pg_type y WHERE y.oid = t.oid
    UNION ALL SELECT y.typelem FROM pg_catalog.pg_type y WHERE y.oid = t.oid
    UNION ALL SELECT y.typarray FROM pg_catalog.pg_type y WHERE y.oid = t.oid
    UNION ALL
    SELECT a.atttypid FROM pg_catalog.pg_type y
      JOIN pg_catalog.pg_attribute a ON a.attrelid = y.typrelid AND a.attnum > 0 AND NOT a.attisdropped
     WHERE y.oid = t.oid
    UNION ALL SELECT g.rngsubtype FROM pg_catalog.pg_range g WHERE g.rngtypid = t.oid
    UNION ALL SELECT g.rngtypid FROM pg_catalog.pg_range g WHERE g.rngmultitypid = t.oid) nx
   WHERE t.oid >= ${FIRST_NORMAL} AND nx.oid <> ${ZERO}),
domain_deps AS (
  SELECT t.oid AS typ, k.objname, k.refclassid, k.refobjid
    FROM types t, LATERAL (
      SELECT k.conname::pg_catalog.text AS objname, d.refclassid, d.refobjid
        FROM pg_catalog.pg_constraint k
        JOIN pg_catalog.pg_depend d ON d.classid = ${cls('pg_constraint')} AND d.objid = k.oid
       WHERE k.contypid = t.oid AND d.refclassid IN (${cls('pg_proc')}, ${cls('pg_operator')})) k
   WHERE t.oid >= ${FIRST_NORMAL}),
opclass AS (
  SELECT oc.opcfamily, oc.opcintype, oc.opcname::pg_catalog.text AS opcname
    FROM pg_catalog.pg_opclass oc
    JOIN pg_catalog.pg_am am ON am.oid = oc.opcmethod AND am.amname IN ('btree', 'hash')
   WHERE oc.opcdefault AND oc.opcintype IN (SELECT oid FROM types)),
reach AS (
  SELECT CASE f.kind WHEN 'a' THEN 'field' ELSE 'function' END AS via,
         pg_catalog.concat(f.sch || '.', f.name) AS what, f.oid AS fn, 'call' AS level, NULL::pg_catalog.text AS expr
    FROM fn_used f
  UNION ALL
  SELECT 'support', pg_catalog.concat(f.sch || '.', f.name), p.prosupport::pg_catalog.oid, 'type', NULL
    FROM fn_used f JOIN pg_catalog.pg_proc p ON p.oid = f.oid
  UNION ALL
  SELECT 'operator', ${opName('u.oid')}, s.fn, s.level, NULL
    FROM op_used u JOIN op_links k ON k.root = u.oid JOIN pg_catalog.pg_operator o ON o.oid = k.oid,
    LATERAL (VALUES (o.oprcode::pg_catalog.oid, 'call'), (o.oprrest::pg_catalog.oid, 'type'),
                    (o.oprjoin::pg_catalog.oid, 'type')) AS s(fn, level)
  UNION ALL
  SELECT d.via, pg_catalog.concat_ws(' ', ${relName('d.rel')}, d.objname,
           CASE WHEN d.top <> d.rel THEN 'read through ' || ${relName('d.top')} END),
         s.fn, CASE WHEN s.estimator THEN 'type' ELSE d.level END, d.expr
    FROM attached_deps d, LATERAL (
      SELECT d.refobjid AS fn, false AS estimator WHERE d.refclassid = ${cls('pg_proc')}
      UNION ALL
      SELECT e.fn, e.estimator FROM op_links k JOIN pg_catalog.pg_operator o ON o.oid = k.oid,
        LATERAL (VALUES (o.oprcode::pg_catalog.oid, false), (o.oprrest::pg_catalog.oid, true),
                        (o.oprjoin::pg_catalog.oid, true)) AS e(fn, estimator)
       WHERE d.refclassid = ${cls('pg_operator')} AND k.root = d.refobjid) s
  UNION ALL
  SELECT 'domain', pg_catalog.concat_ws(' ', ${typeName('d.typ')}, d.objname), s.fn, 'call', NULL
    FROM domain_deps d, LATERAL (
      SELECT d.refobjid AS fn WHERE d.refclassid = ${cls('pg_proc')}
      UNION ALL
      SELECT o.oprcode::pg_catalog.oid FROM pg_catalog.pg_operator o
       WHERE d.refclassid = ${cls('pg_operator')}
         AND o.oid IN (d.refobjid, (SELECT c.oprcom FROM pg_catalog.pg_operator c WHERE c.oid = d.refobjid),
                       (SELECT c.oprnegate FROM pg_catalog.pg_operator c WHERE c.oid = d.refobjid))) s
  UNION ALL
  SELECT 'foreign', pg_catalog.concat_ws(' ', ${relName('r.oid')}, w.fdwname::pg_catalog.text), w.fdwhandler, 'call', NULL
    FROM rels r
    JOIN pg_catalog.pg_foreign_table ft ON ft.ftrelid = r.oid
    JOIN pg_catalog.pg_foreign_server sv ON sv.oid = ft.ftserver
    JOIN pg_catalog.pg_foreign_data_wrapper w ON w.oid = sv.srvfdw
  UNION ALL
  SELECT 'access method', pg_catalog.concat_ws(' ', ${relName('r.oid')}, am.amname::pg_catalog.text), am.amhandler::pg_catalog.oid, 'type', NULL
    FROM rels r JOIN pg_catalog.pg_class c ON c.oid = r.oid JOIN pg_catalog.pg_am am ON am.oid = c.relam
  UNION ALL
  SELECT 'type', ${typeName('y.oid')}, s.fn, 'type', NULL
    FROM types t, LATERAL (SELECT * FROM pg_catalog.pg_type y WHERE y.oid = t.oid) y,
    LATERAL (VALUES (y.typinput::pg_catalog.oid), (y.typoutput::pg_catalog.oid), (y.typreceive::pg_catalog.oid),
                    (y.typsend::pg_catalog.oid), (y.typmodin::pg_catalog.oid), (y.typmodout::pg_catalog.oid),
                    (y.typsubscript::pg_catalog.oid)) AS s(fn)
   WHERE t.oid >= ${FIRST_NORMAL}
  UNION ALL
  SELECT 'type', ${typeName('g.rngtypid')}, s.fn, 'type', NULL
    FROM types t, LATERAL (SELECT * FROM pg_catalog.pg_range g WHERE g.rngtypid = t.oid) g,
    LATERAL (VALUES (g.rngcanonical::pg_catalog.oid), (g.rngsubdiff::pg_catalog.oid)) AS s(fn)
  UNION ALL
  SELECT 'cast', ${typeName('k.castsource')} || ' to ' || ${typeName('k.casttarget')}, k.castfunc, 'type', NULL
    FROM types t, LATERAL (
      SELECT k.castsource, k.casttarget, k.castfunc FROM pg_catalog.pg_cast k
       WHERE k.castsource = t.oid AND k.oid >= ${FIRST_NORMAL} AND k.castfunc <> ${ZERO}
         AND k.casttarget IN (SELECT oid FROM types)) k
  UNION ALL
  SELECT 'operator class', pg_catalog.concat_ws(' ', oc.opcname, ${typeName('oc.opcintype')}), ap.amproc::pg_catalog.oid, 'type', NULL
    FROM opclass oc JOIN pg_catalog.pg_amproc ap ON ap.amprocfamily = oc.opcfamily AND ap.oid >= ${FIRST_NORMAL}
  UNION ALL
  SELECT 'operator class', pg_catalog.concat_ws(' ', oc.opcname, ${typeName('oc.opcintype')}), o.oprcode::pg_catalog.oid, 'type', NULL
    FROM opclass oc
    JOIN pg_catalog.pg_amop ao ON ao.amopfamily = oc.opcfamily AND ao.oid >= ${FIRST_NORMAL}
    JOIN pg_catalog.pg_operator o ON o.oid = ao.amopopr),
-- The schemas of the path (but pg_catalog and pg_temp) that a role other than a superuser owns or may create in.
writable_path AS MATERIALIZED (
  SELECT x.pos FROM path x JOIN pg_catalog.pg_namespace sn ON sn.nspname::pg_catalog.text = x.nsp
   WHERE sn.nspname <> 'pg_catalog' AND NOT pg_catalog.starts_with(x.nsp, 'pg_temp')
     AND (NOT (SELECT o.rolsuper FROM pg_catalog.pg_roles o WHERE o.oid = sn.nspowner)
          OR EXISTS (SELECT 1 FROM pg_catalog.aclexplode(sn.nspacl) g
                       LEFT JOIN pg_catalog.pg_roles gr ON gr.oid = g.grantee
                      WHERE g.privilege_type = 'CREATE' AND (g.grantee = ${ZERO} OR NOT gr.rolsuper)))),
reach_all AS (
  SELECT * FROM reach
  UNION ALL
  SELECT 'aggregate', r.what, s.fn, r.level, r.expr
    FROM reach r, LATERAL (SELECT * FROM pg_catalog.pg_aggregate g WHERE g.aggfnoid::pg_catalog.oid = r.fn) g,
    LATERAL (VALUES (g.aggtransfn::pg_catalog.oid), (g.aggfinalfn::pg_catalog.oid), (g.aggcombinefn::pg_catalog.oid),
                    (g.aggserialfn::pg_catalog.oid), (g.aggdeserialfn::pg_catalog.oid), (g.aggmtransfn::pg_catalog.oid),
                    (g.aggminvtransfn::pg_catalog.oid), (g.aggmfinalfn::pg_catalog.oid),
                    ((SELECT o.oprcode::pg_catalog.oid FROM pg_catalog.pg_operator o WHERE o.oid = g.aggsortop))) AS s(fn))
SELECT DISTINCT r.via, r.what, r.level, r.expr, n.nspname::pg_catalog.text AS schema, p.proname::pg_catalog.text AS fn,
       p.provolatile::pg_catalog.text AS volatility, l.lanname::pg_catalog.text AS language,
       a.rolsuper AS owner_super, p.oid < ${FIRST_NORMAL} AS initdb,
       pg_catalog.oidvectortypes(p.proargtypes) AS args,
       -- A schema the owner can write comes before the function's own on the session's path (or the
       -- function's schema is not on it): names its SQL body leaves unqualified may resolve to the
       -- owner's objects there, so only C code of an extension counts as reviewed.
       EXISTS (
         SELECT 1 FROM writable_path w
          WHERE w.pos < COALESCE((SELECT y.pos FROM path y WHERE y.nsp = n.nspname::pg_catalog.text), 2147483647)) AS shadowable,
       (SELECT x.extname::pg_catalog.text FROM pg_catalog.pg_depend d
          JOIN pg_catalog.pg_extension x ON x.oid = d.refobjid
         WHERE d.classid = ${cls('pg_proc')} AND d.objid = p.oid AND d.deptype = 'e' LIMIT 1) AS extension
  FROM reach_all r, LATERAL (
    SELECT p.oid, p.proname, p.provolatile, p.prolang, p.proowner, p.pronamespace, p.proargtypes FROM pg_catalog.pg_proc p
     WHERE p.oid = r.fn
       AND NOT (p.oid < ${FIRST_NORMAL} AND p.provolatile IN ('i', 's') AND p.proname !~ $2::pg_catalog.text)) p
  JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
  JOIN pg_catalog.pg_language l ON l.oid = p.prolang
  JOIN pg_catalog.pg_roles a ON a.oid = p.proowner`;

/** `string_agg` of the transaction ids that last wrote each row of a catalog (its user part). */
const rowsOf = (table: string, order: string, where = `x.oid >= ${FIRST_NORMAL}`) =>
  `(SELECT pg_catalog.string_agg(x.xmin::pg_catalog.text, ',' ORDER BY ${order}) FROM pg_catalog.${table} x WHERE ${where})`;

/** The server's transaction snapshot: which transactions have committed (checked before each remembered verdict is used). */
export const SNAPSHOT_SQL = 'SELECT pg_catalog.txid_current_snapshot()::pg_catalog.text AS snapshot';

/**
 * The catalog's version, read when the snapshot changed since a verdict was remembered: no catalog can
 * change without a transaction that assigns an id, which changes the snapshot. It digests which
 * transaction last wrote every row created after initdb of the catalogs a verdict reads (functions,
 * operators, relations, types, rules, policies, casts, constraints, statistics, inheritance,
 * aggregates, operator classes, ranges, foreign-data wrappers, access methods, extensions, schemas,
 * role and database settings) and the session's search_path. A changed digest forgets the remembered
 * verdicts; a changed snapshot with the same digest (data was written, not the catalog) keeps them.
 * Column types are not digested: a column's type changes without a new pg_class row only between
 * binary-coercible types, which share their casts' and operators' functions.
 */
/** The digest of VERSION_SQL, as one expression (its scalar subqueries run only when it is evaluated). */
export const CATALOG_DIGEST = `pg_catalog.md5(pg_catalog.concat_ws('|',
  pg_catalog.current_setting('search_path'),  ${rowsOf('pg_proc', 'x.oid')},
  ${rowsOf('pg_operator', 'x.oid')},
  ${rowsOf('pg_class', 'x.oid')},
  ${rowsOf('pg_type', 'x.oid')},
  ${rowsOf('pg_rewrite', 'x.oid')},
  ${rowsOf('pg_policy', 'x.oid')},
  ${rowsOf('pg_cast', 'x.oid')},
  ${rowsOf('pg_constraint', 'x.oid')},
  ${rowsOf('pg_statistic_ext', 'x.oid')},
  ${rowsOf('pg_namespace', 'x.oid')},
  ${rowsOf('pg_opclass', 'x.oid')},
  ${rowsOf('pg_opfamily', 'x.oid')},
  ${rowsOf('pg_amop', 'x.oid')},
  ${rowsOf('pg_amproc', 'x.oid')},
  ${rowsOf('pg_am', 'x.oid')},
  ${rowsOf('pg_extension', 'x.oid')},
  ${rowsOf('pg_foreign_data_wrapper', 'x.oid')},
  ${rowsOf('pg_foreign_server', 'x.oid')},
  ${rowsOf('pg_inherits', 'x.inhrelid, x.inhseqno', 'true')},
  ${rowsOf('pg_aggregate', 'x.aggfnoid', `x.aggfnoid::pg_catalog.oid >= ${FIRST_NORMAL}`)},
  ${rowsOf('pg_range', 'x.rngtypid', `x.rngtypid >= ${FIRST_NORMAL}`)},
  ${rowsOf('pg_foreign_table', 'x.ftrelid', 'true')},
  ${rowsOf('pg_db_role_setting', 'x.setdatabase, x.setrole', 'true')}
))`;
export const VERSION_SQL = `
SELECT pg_catalog.txid_current_snapshot()::pg_catalog.text AS snapshot, ${CATALOG_DIGEST} AS hash`;

/** The texts a read's catalog check fails with (`catalogCheckSql`). */
export const SNAPSHOT_MOVED_MARK = 'loupe-snapshot-moved';
export const CATALOG_CHANGED_MARK = 'loupe-catalog-changed';

/**
 * A read's catalog check, run in the read's own transaction just before its statement (the read's first
 * message, drivers/postgres.ts), for a statement whose verdict was found under catalog digest `digest`,
 * last seen at the server's snapshot `snapshot`. It answers one row, `snapshot` (the server's snapshot
 * now) and `quiet` (unchanged since `snapshot`), or fails with an error holding one of the marks (a cast
 * of that text to integer: the text is not a constant, so the planner cannot fold the cast into a
 * failure of every call), which aborts the transaction before the statement runs.
 *
 * - `digest` undefined (the quiet form, a few microseconds to plan and run): fails with
 *   SNAPSHOT_MOVED_MARK whenever the snapshot moved (any write on the server since).
 * - with `digest` (the form for a server that is being written to): passes when the snapshot is
 *   unchanged, else computes the catalog's digest in the same statement (its subqueries run only then)
 *   and fails with CATALOG_CHANGED_MARK when it differs. About 1 ms to plan and 1-3 ms to run on the
 *   server when the snapshot moved, which is what the separate digest query cost before, without its
 *   round trips.
 */
export function catalogCheckSql(snapshot: string, digest?: string): string {
  return snapshotCheckSql(CATALOG_DIGEST, CATALOG_MARKS, snapshot, digest);
}

/** The marks a snapshot check fails with: the snapshot moved (quiet form), the digest changed. */
export interface CheckMarks {
  moved: string;
  changed: string;
}
export const CATALOG_MARKS: CheckMarks = { moved: SNAPSHOT_MOVED_MARK, changed: CATALOG_CHANGED_MARK };

/**
 * The snapshot check of `catalogCheckSql`, for any digest expression: the catalog rule's
 * (CATALOG_DIGEST) and the escape inventory's (postgres-escapes-sql.ts ESCAPE_DIGEST).
 */
export function snapshotCheckSql(
  digestSql: string,
  marks: CheckMarks,
  snapshot: string,
  digest?: string,
): string {
  if (!/^[0-9:,]+$/.test(snapshot) || (digest !== undefined && !/^[0-9a-f]+$/.test(digest)))
    throw new Error('Unexpected snapshot or digest text');
  const fail = (mark: string) => `pg_catalog.concat('${mark} ', s.v)::pg_catalog.int4::pg_catalog.text`;
  const changed = digest === undefined ? '' : ` WHEN ${digestSql} = '${digest}' THEN s.v`;
  return `SELECT CASE WHEN s.v = '${snapshot}' THEN s.v${changed}
  ELSE ${fail(digest === undefined ? marks.moved : marks.changed)} END AS snapshot, s.v = '${snapshot}' AS quiet
  FROM (SELECT pg_catalog.txid_current_snapshot()::pg_catalog.text AS v) s`;
}

/**
 * Which of a snapshot check's failures `error` is (the read's failure in its first message, marked
 * `inPreCheck` by the driver): 'moved' (quiet form: written to since), 'changed' (digest form: the digest
 * differs), or undefined (the statement's own error).
 */
export function checkFailure(
  error: unknown,
  marks: CheckMarks,
  inLine: boolean,
): 'moved' | 'changed' | undefined {
  const e = error as { inPreCheck?: unknown; code?: unknown; message?: unknown } | null;
  if (e?.inPreCheck !== true || e.code !== '22P02') return undefined;
  const message = String(e.message);
  if (!inLine && message.includes(marks.moved)) return 'moved';
  if (inLine && message.includes(marks.changed)) return 'changed';
  return undefined;
}
