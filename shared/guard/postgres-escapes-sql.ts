import { type CheckMarks, snapshotCheckSql } from './postgres-catalog-sql';

/**
 * The escape inventory's catalog SQL (postgres-escapes.ts): one query that lists every way the
 * connection's role can change something that a read-only transaction ending in ROLLBACK does not
 * contain, and the digest of the catalog rows that query depends on.
 *
 * Inside `BEGIN READ ONLY … ROLLBACK` PostgreSQL itself refuses every write, sequence change, DDL and
 * COPY, drops notifications and undoes SET / set_config. Code, owner-written or not, can then change
 * something only through an escape, which this query looks for among the roles whose privileges code
 * running in the read can use ("the reach"):
 * - the login itself and every role it is a member of (it can SET ROLE to any of them, and inherits
 *   the privileges of most: pg_has_role … 'MEMBER');
 * - recursively, the owner of every SECURITY DEFINER function a role of the reach may execute, and the
 *   roles that owner is a member of (the function runs with its owner's privileges).
 * An escape is any of:
 * - a superuser, or a role with REPLICATION (replication slots are not transactional);
 * - membership in pg_write_server_files, pg_execute_server_program, pg_read_server_files or
 *   pg_signal_backend (server files, programs, other sessions);
 * - EXECUTE on a built-in that initdb does not grant to PUBLIC (PostgreSQL's own list of privileged
 *   functions: lo_export, pg_read_file, pg_reload_conf, pg_stat_reset, pg_switch_wal, replication
 *   origins …), except the monitoring reads of pg_monitor and pg_read_all_stats;
 * - EXECUTE on a C function of an extension that is not on the reviewed data-only list (dblink,
 *   postgres_fdw, adminpack, pg_background, http, pg_net, aws_lambda, aws_s3 … and any extension
 *   nobody reviewed: extensions are judged whole), or on a C function outside any extension;
 * - EXECUTE on a function in an untrusted language (plpython3u, plperlu …);
 * - USAGE on a foreign server, or SELECT on a foreign table (a read of another server or of files).
 * Functions that SQL cannot call (handlers returning a pseudo type, functions taking `internal`) are
 * left out. Each row carries the REVOKE statements that would close it.
 *
 * Everything is qualified and no operator is looked up by the role's search_path: the query is our own
 * text and resolves the same whatever the database's owner created.
 */

/** Extensions whose code only computes on values (reviewed: no network, no files, no other sessions, no SQL text run). */
export const PG_DATA_ONLY_EXTENSIONS: readonly string[] = [
  'plpgsql',
  // PostGIS and its family (outdb rasters and GDAL drivers are off unless a superuser turns them on)
  'postgis',
  'postgis_raster',
  'postgis_topology',
  'postgis_sfcgal',
  'address_standardizer',
  'address_standardizer_data_us',
  // types and their operators
  'vector',
  'hll',
  'ip4r',
  'semver',
  'prefix',
  'citext',
  'hstore',
  'ltree',
  'cube',
  'earthdistance',
  'isn',
  'seg',
  'intarray',
  'btree_gist',
  'btree_gin',
  'bloom',
  'pg_trgm',
  'fuzzystrmatch',
  'unaccent',
  'uuid-ossp',
  'pgcrypto',
  'tablefunc',
  'intagg',
  'dict_int',
  'dict_xsyn',
  'tsm_system_rows',
  'tsm_system_time',
  'lo',
  'pg_stat_statements',
  'pg_buffercache',
  'pgstattuple',
  'pg_visibility',
  'pg_freespacemap',
  'pageinspect',
  'amcheck',
  'timescaledb',
];

/** Built-ins initdb keeps from PUBLIC that only read monitoring state (granted to pg_monitor, pg_read_all_stats). */
const MONITORING_READS = [
  'pg_ls_logdir',
  'pg_ls_waldir',
  'pg_ls_archive_statusdir',
  'pg_ls_tmpdir',
  'pg_ls_logicalmapdir',
  'pg_ls_logicalsnapdir',
  'pg_ls_replslotdir',
  'pg_get_backend_memory_contexts',
  'pg_get_shmem_allocations',
  'pg_current_logfile',
  'pg_config',
  'pg_hba_file_rules',
  'pg_ident_file_mappings',
  'pg_show_all_file_settings',
  'pg_show_replication_origin_status',
  'pg_replication_origin_oid',
  'pg_replication_origin_progress',
  'pg_replication_origin_session_is_setup',
  'pg_replication_origin_session_progress',
  'pg_stat_have_stats',
];

const list = (names: readonly string[]) => names.map((n) => `'${n.replace(/'/g, "''")}'`).join(', ');

/** `FirstNormalObjectId`: objects below it were created by initdb. */
const FIRST_NORMAL = 16384;

/**
 * The inventory: rows of (kind, object, detail, revoke, reaches). What only a SECURITY DEFINER function
 * reaches is one row of kind `security-definer` for that function, `reaches` listing `kind object` of
 * each escape behind it. No parameters.
 */
export const INVENTORY_SQL = `
WITH RECURSIVE reach(role, via) AS (
  SELECT r.oid, NULL::pg_catalog.oid FROM pg_catalog.pg_roles r
  WHERE pg_catalog.pg_has_role(CURRENT_USER, r.oid, 'MEMBER')
  UNION
  SELECT o.oid, COALESCE(x.via, p.oid)
  FROM reach x
  JOIN pg_catalog.pg_proc p ON p.prosecdef AND p.oid >= ${FIRST_NORMAL}
    AND pg_catalog.has_function_privilege(x.role, p.oid, 'EXECUTE')
    AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend d JOIN pg_catalog.pg_extension e ON e.oid = d.refobjid
      WHERE d.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND d.objid = p.oid AND d.deptype = 'e'
        AND e.extname IN (${list(PG_DATA_ONLY_EXTENSIONS)}))
  JOIN pg_catalog.pg_roles o ON pg_catalog.pg_has_role(p.proowner, o.oid, 'MEMBER')
),
-- Each role with each way it is reached: by the login itself (via null), or through a SECURITY DEFINER
-- function (every path is listed: revoking one must not leave another open).
roles AS (
  SELECT DISTINCT x.role, x.via FROM reach x
),
login AS (SELECT r.oid FROM pg_catalog.pg_roles r WHERE r.rolname = CURRENT_USER),
-- Direct membership edges from a role of the login's own closure to role t: REVOKE t FROM m.
edges AS (
  SELECT m.roleid, pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(m.member)) AS member
  FROM pg_catalog.pg_auth_members m
  WHERE pg_catalog.pg_has_role(CURRENT_USER, m.member, 'MEMBER')
),
attrs AS (
  SELECT 'superuser'::pg_catalog.text AS kind, r.rolname::pg_catalog.text AS object,
    'the role is a superuser: it can reach anything, files and programs included'::pg_catalog.text AS detail,
    x.via, r.oid AS target, r.oid = (SELECT oid FROM login) AS own, 'NOSUPERUSER'::pg_catalog.text AS attr
  FROM roles x JOIN pg_catalog.pg_roles r ON r.oid = x.role WHERE r.rolsuper
  UNION ALL
  SELECT 'replication', r.rolname,
    'the role has REPLICATION: replication slots and origins are not undone by ROLLBACK',
    x.via, r.oid, r.oid = (SELECT oid FROM login), 'NOREPLICATION'
  FROM roles x JOIN pg_catalog.pg_roles r ON r.oid = x.role WHERE r.rolreplication AND NOT r.rolsuper
  UNION ALL
  SELECT 'server-role', r.rolname,
    CASE r.rolname WHEN 'pg_signal_backend' THEN 'members may cancel and end other sessions'
      WHEN 'pg_read_server_files' THEN 'members may read any file the server can read'
      WHEN 'pg_write_server_files' THEN 'members may write files on the server'
      ELSE 'members may run programs on the server' END,
    x.via, r.oid, false, NULL
  FROM roles x JOIN pg_catalog.pg_roles r ON r.oid = x.role
  WHERE r.rolname IN ('pg_write_server_files', 'pg_execute_server_program', 'pg_read_server_files', 'pg_signal_backend')
),
fns AS (
  SELECT p.oid, p.oid::pg_catalog.regprocedure::pg_catalog.text AS sig, p.proowner, p.proacl,
    e.extname::pg_catalog.text AS ext, l.lanname::pg_catalog.text AS lang,
    CASE
      WHEN p.oid < ${FIRST_NORMAL} THEN 'privileged-function'
      WHEN e.extname IS NOT NULL AND l.lanname IN ('c', 'internal') THEN 'extension'
      WHEN e.extname IS NULL AND l.lanname = 'c' THEN 'c-function'
      ELSE 'untrusted-language'
    END AS kind
  FROM pg_catalog.pg_proc p
  JOIN pg_catalog.pg_language l ON l.oid = p.prolang
  LEFT JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND d.objid = p.oid AND d.deptype = 'e'
  LEFT JOIN pg_catalog.pg_extension e ON e.oid = d.refobjid
  WHERE p.prorettype NOT IN ('pg_catalog.language_handler'::pg_catalog.regtype, 'pg_catalog.fdw_handler'::pg_catalog.regtype,
      'pg_catalog.index_am_handler'::pg_catalog.regtype, 'pg_catalog.table_am_handler'::pg_catalog.regtype,
      'pg_catalog.tsm_handler'::pg_catalog.regtype)
    AND NOT ('pg_catalog.internal'::pg_catalog.regtype = ANY (p.proargtypes::pg_catalog.oid[]))
    AND (
      (p.oid < ${FIRST_NORMAL} AND p.proacl IS NOT NULL AND p.proname NOT IN (${list(MONITORING_READS)})
        AND NOT EXISTS (SELECT 1 FROM pg_catalog.aclexplode(p.proacl) a WHERE a.grantee = 0 AND a.privilege_type = 'EXECUTE'))
      OR (p.oid >= ${FIRST_NORMAL} AND l.lanname IN ('c', 'internal')
        AND (e.extname IS NULL OR e.extname NOT IN (${list(PG_DATA_ONLY_EXTENSIONS)})))
      OR (p.oid >= ${FIRST_NORMAL} AND NOT l.lanpltrusted AND l.lanname NOT IN ('c', 'internal'))
    )
),
granted AS (
  SELECT f.kind, f.ext, f.sig, f.lang, x.via,
    -- Who holds EXECUTE for the reaching role: PUBLIC or a role of its closure (the grant to revoke).
    (SELECT pg_catalog.array_agg(DISTINCT CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(a.grantee)) END)
      FROM pg_catalog.aclexplode(COALESCE(f.proacl, pg_catalog.acldefault('f', f.proowner))) a
      WHERE a.privilege_type = 'EXECUTE' AND (a.grantee = 0 OR pg_catalog.pg_has_role(x.role, a.grantee, 'MEMBER'))) AS holders
  FROM fns f JOIN roles x ON pg_catalog.has_function_privilege(x.role, f.oid, 'EXECUTE')
),
-- One row per function and path, with every grant that lets a role of that path execute it.
granted_one AS (
  SELECT g.kind, g.ext, g.sig, g.lang, g.via,
    pg_catalog.array_agg(DISTINCT h.holder) FILTER (WHERE h.holder IS NOT NULL) AS holders
  FROM granted g LEFT JOIN LATERAL pg_catalog.unnest(g.holders) h(holder) ON true
  GROUP BY g.kind, g.ext, g.sig, g.lang, g.via
),
grouped AS (
  SELECT g.kind, COALESCE(g.ext, g.sig) AS object, g.via,
    pg_catalog.count(*) AS n, pg_catalog.array_agg(g.sig ORDER BY g.sig) AS sigs,
    (pg_catalog.array_agg(g.lang))[1] AS lang
  FROM granted_one g GROUP BY g.kind, COALESCE(g.ext, g.sig), g.via
),
revokes AS (
  SELECT g.kind, COALESCE(g.ext, g.sig) AS object, g.via, h.holder,
    pg_catalog.string_agg(g.sig, ', ' ORDER BY g.sig) AS sigs
  FROM granted_one g, pg_catalog.unnest(g.holders) h(holder)
  GROUP BY g.kind, COALESCE(g.ext, g.sig), g.via, h.holder
),
servers AS (
  SELECT 'foreign-server'::pg_catalog.text AS kind, s.srvname::pg_catalog.text AS object, x.via,
    (SELECT pg_catalog.array_agg(DISTINCT CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(a.grantee)) END)
      FROM pg_catalog.aclexplode(COALESCE(s.srvacl, pg_catalog.acldefault('S', s.srvowner))) a
      WHERE a.privilege_type = 'USAGE' AND (a.grantee = 0 OR pg_catalog.pg_has_role(x.role, a.grantee, 'MEMBER'))) AS holders
  FROM pg_catalog.pg_foreign_server s JOIN roles x ON pg_catalog.has_server_privilege(x.role, s.oid, 'USAGE')
),
ftables AS (
  SELECT 'foreign-table'::pg_catalog.text AS kind,
    pg_catalog.format('%I.%I', n.nspname, c.relname) AS object, x.via,
    (SELECT pg_catalog.array_agg(DISTINCT CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(a.grantee)) END)
      FROM pg_catalog.aclexplode(COALESCE(c.relacl, pg_catalog.acldefault('r', c.relowner))) a
      WHERE a.privilege_type = 'SELECT' AND (a.grantee = 0 OR pg_catalog.pg_has_role(x.role, a.grantee, 'MEMBER'))) AS holders
  FROM pg_catalog.pg_foreign_table ft
  JOIN pg_catalog.pg_class c ON c.oid = ft.ftrelid
  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
  JOIN roles x ON pg_catalog.has_table_privilege(x.role, c.oid, 'SELECT')
),
found AS (
SELECT a.kind, a.object, a.detail, a.via,
  CASE WHEN a.own THEN ARRAY[pg_catalog.format('ALTER ROLE %I %s', a.object, a.attr)]
    WHEN a.via IS NOT NULL THEN ARRAY[NULL::pg_catalog.text]
    ELSE (SELECT pg_catalog.array_agg(pg_catalog.format('REVOKE %I FROM %s', a.object, e.member) ORDER BY e.member)
      FROM edges e WHERE e.roleid = a.target) END AS revoke
FROM attrs a
UNION ALL
SELECT g.kind, g.object,
  CASE g.kind
    WHEN 'privileged-function' THEN 'a built-in PostgreSQL keeps from PUBLIC (it reaches files, settings or other sessions)'
    WHEN 'extension' THEN pg_catalog.format('%s C function(s) of an extension not reviewed as data-only (it may reach other sessions, the network or files), such as %s', g.n, g.sigs[1])
    WHEN 'c-function' THEN 'a C function outside any extension (unreviewed code)'
    ELSE pg_catalog.format('a function in the untrusted language %s (it may reach files and the network)', g.lang)
  END,
  g.via,
  CASE WHEN g.via IS NOT NULL THEN ARRAY[NULL::pg_catalog.text]
  ELSE (SELECT pg_catalog.array_agg(pg_catalog.format('REVOKE EXECUTE ON FUNCTION %s FROM %s', r.sigs, r.holder) ORDER BY r.holder)
    FROM revokes r WHERE r.kind = g.kind AND r.object = g.object AND r.via IS NOT DISTINCT FROM g.via) END
FROM grouped g
UNION ALL
SELECT s.kind, s.object, 'a read through this foreign server runs on another server, as another role', s.via,
  CASE WHEN s.via IS NOT NULL THEN ARRAY[NULL::pg_catalog.text]
  ELSE (SELECT pg_catalog.array_agg(pg_catalog.format('REVOKE USAGE ON FOREIGN SERVER %I FROM %s', s.object, h) ORDER BY h) FROM pg_catalog.unnest(s.holders) h) END
FROM (SELECT DISTINCT ON (object, via) * FROM servers ORDER BY object, via) s
UNION ALL
SELECT t.kind, t.object, 'a read of this foreign table runs on another server or reads files', t.via,
  CASE WHEN t.via IS NOT NULL THEN ARRAY[NULL::pg_catalog.text]
  ELSE (SELECT pg_catalog.array_agg(pg_catalog.format('REVOKE SELECT ON %s FROM %s', t.object, h) ORDER BY h) FROM pg_catalog.unnest(t.holders) h) END
FROM (SELECT DISTINCT ON (object, via) * FROM ftables ORDER BY object, via) t
)
SELECT f.kind, f.object, f.detail, f.revoke, NULL::pg_catalog.text[] AS reaches FROM found f WHERE f.via IS NULL
UNION ALL
-- What only a SECURITY DEFINER function reaches: one row per function, closed by revoking its EXECUTE.
SELECT 'security-definer', p.oid::pg_catalog.regprocedure::pg_catalog.text,
  pg_catalog.format('a SECURITY DEFINER function: it runs as %s', pg_catalog.pg_get_userbyid(p.proowner)),
  ARRAY(SELECT pg_catalog.format('REVOKE EXECUTE ON FUNCTION %s FROM %s', p.oid::pg_catalog.regprocedure, h.holder)
    FROM (SELECT DISTINCT CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(a.grantee)) END AS holder
      FROM pg_catalog.aclexplode(COALESCE(p.proacl, pg_catalog.acldefault('f', p.proowner))) a
      WHERE a.privilege_type = 'EXECUTE' AND (a.grantee = 0 OR pg_catalog.pg_has_role(CURRENT_USER, a.grantee, 'MEMBER'))) h
    ORDER BY h.holder) || pg_catalog.format('ALTER FUNCTION %s SECURITY INVOKER', p.oid::pg_catalog.regprocedure),
  pg_catalog.array_agg(DISTINCT f.kind || ' ' || f.object)
FROM found f JOIN pg_catalog.pg_proc p ON p.oid = f.via
GROUP BY p.oid
ORDER BY 1, 2`;

/** `rowsOf`: which transaction last wrote each row of a catalog (the rows whose change may change the inventory). */
const xmins = (table: string, key: string, where: string) =>
  `(SELECT pg_catalog.string_agg(x.xmin::pg_catalog.text, ',' ORDER BY ${key}) FROM pg_catalog.${table} x WHERE ${where})`;

/**
 * The digest of what the inventory reads: functions created after initdb and built-ins whose grants
 * changed, extensions, languages, roles (their attributes, through pg_roles, whose rows are not
 * readable as xmin), memberships, foreign servers and tables, user mappings. Any GRANT, REVOKE, CREATE
 * or ALTER that may change the inventory changes one of these rows.
 */
export const ESCAPE_DIGEST = `pg_catalog.md5(pg_catalog.concat_ws('|',
  CURRENT_USER::pg_catalog.text,
  ${xmins('pg_proc', 'x.oid', `x.oid >= ${FIRST_NORMAL} OR x.proacl IS NOT NULL`)},
  ${xmins('pg_extension', 'x.oid', 'true')},
  ${xmins('pg_language', 'x.oid', 'true')},
  ${xmins('pg_auth_members', 'x.roleid, x.member', 'true')},
  ${xmins('pg_foreign_server', 'x.oid', 'true')},
  ${xmins('pg_foreign_data_wrapper', 'x.oid', 'true')},
  ${xmins('pg_foreign_table', 'x.ftrelid', 'true')},
  (SELECT pg_catalog.string_agg(pg_catalog.concat_ws(':', r.oid, r.rolsuper, r.rolreplication, r.rolinherit), ',' ORDER BY r.oid) FROM pg_catalog.pg_roles r),
  (SELECT pg_catalog.string_agg(pg_catalog.concat_ws(':', u.umid, u.srvid, u.umuser), ',' ORDER BY u.umid) FROM pg_catalog.pg_user_mappings u)
))`;

/** The escape digest and the server's snapshot now (read with the inventory, in the same transaction). */
export const ESCAPE_VERSION_SQL = `
SELECT pg_catalog.txid_current_snapshot()::pg_catalog.text AS snapshot, ${ESCAPE_DIGEST} AS hash`;

/** The texts an open-mode read's check fails with (`escapeCheckSql`). */
export const ESCAPE_SNAPSHOT_MARK = 'loupe-escape-snapshot-moved';
export const ESCAPE_CHANGED_MARK = 'loupe-escapes-changed';

/**
 * An open-mode read's check, run in its own transaction just before the statement (as the catalog
 * check of strict mode is: the driver's preCheck): one row when the inventory found at `snapshot` under
 * `digest` still stands, an error with a mark (the statement then does not run) when the snapshot moved
 * (quiet form) or when the escape digest changed (the form with `digest`, for a server being written
 * to: it computes the digest in line only when the snapshot moved).
 */
export function escapeCheckSql(snapshot: string, digest?: string): string {
  return snapshotCheckSql(ESCAPE_DIGEST, ESCAPE_MARKS, snapshot, digest);
}

export const ESCAPE_MARKS: CheckMarks = { moved: ESCAPE_SNAPSHOT_MARK, changed: ESCAPE_CHANGED_MARK };
