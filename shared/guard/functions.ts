/**
 * The function rule (issues 8 and 23): a call runs only when it is known to be harmless.
 *
 * - PostgreSQL: the target server's catalog decides (postgres-catalog.ts): every overload the name
 *   could resolve to must be a built-in (pg_catalog, information_schema) marked IMMUTABLE or STABLE or
 *   on the reviewed volatile list below, or a reviewed data-only extension's function
 *   (`pgReviewedExtensions`, judged whole), or be listed in the connection's `allowedFunctions` by its
 *   admin (`pgAllowedIdentity`: exact identity). A function the database owner
 *   wrote is refused whatever its volatility label (the label is the owner's claim, not a guarantee).
 *   On top of that, `pgDenied` refuses functions that run SQL text, open other sessions, hold locks or
 *   maintain indexes whatever a catalog or an admin says.
 * - MySQL/MariaDB and SQL Server: built-in functions on the allow lists below; stored functions only
 *   when the connection's `allowedFunctions` lists them.
 * - SQLite: the built-in scalar, aggregate, window, date and JSON functions and the read-only
 *   table-valued functions.
 */

const pattern = (patterns: string[]) => {
  const exact = new Set(patterns.filter((p) => !p.endsWith('*')));
  const prefixes = patterns.filter((p) => p.endsWith('*')).map((p) => p.slice(0, -1));
  return (name: string) => exact.has(name) || prefixes.some((p) => name.startsWith(p));
};

/** PostgreSQL functions refused by name in every schema, with the reason given to the caller. */
const pgDeniedGroups: [string, string[]][] = [
  [
    'it runs SQL text the guard cannot verify',
    [
      'ts_stat',
      'ts_rewrite',
      'query_to_xml*',
      'query_to_xmlschema',
      'cursor_to_xml*',
      'table_to_xml*',
      'schema_to_xml*',
      'database_to_xml*',
      'dblink*',
      'pg_get_querydef',
      'xpath_table',
      'crosstab*',
      'connectby',
    ],
  ],
  [
    'it takes or releases locks that outlive the read',
    ['pg_advisory*', 'pg_try_advisory*', 'pg_advisory_unlock*'],
  ],
  [
    'it acts on other sessions or the server',
    [
      'pg_terminate_backend',
      'pg_cancel_backend',
      'pg_signal_backend',
      'pg_reload_conf',
      'pg_rotate_logfile',
      'pg_switch_wal',
      'pg_promote',
      'pg_wal_replay_*',
      'pg_backup_*',
      'pg_start_backup',
      'pg_stop_backup',
      'pg_create_*',
      'pg_drop_replication_slot',
      'pg_copy_*_replication_slot',
      'pg_replication_*',
      'pg_logical_*',
      'pg_log_backend_memory_contexts',
      'pg_stat_reset*',
      'pg_stat_statements_reset',
      'pg_import_system_collations',
      'pg_notify',
      'pg_export_snapshot',
      'set_config',
    ],
  ],
  [
    'it maintains indexes or tables',
    ['brin_summarize*', 'brin_desummarize_range', 'gin_clean_pending_list', 'pg_prewarm', 'pg_repack*'],
  ],
  [
    'it reads server files or large objects',
    [
      'pg_read_file',
      'pg_read_binary_file',
      'pg_ls_*',
      'pg_stat_file',
      'pg_file_*',
      'lo_*',
      'loread',
      'lowrite',
    ],
  ],
  ['it sleeps', ['pg_sleep*']],
  [
    'it changes sequences or transaction state',
    ['nextval', 'setval', 'txid_current*', 'pg_current_xact_id*'],
  ],
];
const pgDeniedMatchers = pgDeniedGroups.map(([reason, names]) => [reason, pattern(names)] as const);

/**
 * The refused PostgreSQL names as one anchored regular expression (POSIX, for the catalog query: a
 * built-in it matches is returned for review whatever its volatility).
 */
export function pgDeniedPattern(): string {
  const literal = (s: string) => s.replace(/[\\^$.|?*+()[\]{}]/g, '\\$&');
  const alternatives = pgDeniedGroups.flatMap(([, names]) =>
    names.map((n) => (n.endsWith('*') ? `${literal(n.slice(0, -1))}.*` : literal(n))),
  );
  return `^(${alternatives.join('|')})$`;
}

/** Why a PostgreSQL function is refused by name, or undefined. `name` as the server folds it. */
export function pgDenied(name: string): string | undefined {
  const lower = name.toLowerCase();
  for (const [reason, match] of pgDeniedMatchers) if (match(lower)) return reason;
  return undefined;
}

/**
 * Reviewed volatile built-ins (pg_catalog only) that are harmless in a read: they neither write,
 * lock, run SQL text nor reach outside the session. Everything else volatile is refused.
 */
export const pgReviewedVolatile = new Set([
  'random',
  'random_normal',
  'clock_timestamp',
  'timeofday',
  'gen_random_uuid',
  'uuidv4',
  'uuidv7',
  'pg_relation_size',
  'pg_total_relation_size',
  'pg_table_size',
  'pg_indexes_size',
  'pg_database_size',
  'pg_tablespace_size',
]);

/**
 * A reviewed PostgreSQL extension (strict mode: the connection's role can reach an escape such as
 * dblink, so each read's functions are checked). Judged whole by membership (pg_depend deptype 'e'):
 * every function of the extension written in C or internal, or in SQL and owned by a superuser (the
 * extension's own script: an owner can add functions to an extension it owns, never superuser-owned
 * ones), may run in a read, except those `except` names with the reason. Functions of the extension
 * written in other languages (plpgsql: PostGIS's AddGeometryColumn, Populate_Geometry_Columns, …)
 * are not covered: most run SQL text built from their arguments, and need listing.
 * `only`: the extension is reviewed function by function, and only those names are covered.
 */
export interface ReviewedExtension {
  /** Why the extension is data-only (shown in the docs, for review). */
  why: string;
  /** Only these function names are covered (undefined: the whole extension). */
  only?: ReadonlySet<string>;
  /** Functions of the extension that stay refused (matched on name, or name and argument types), and why. */
  except?: (fn: string, args: string) => string | undefined;
}

const byName =
  (reasons: Record<string, string>) =>
  (fn: string): string | undefined =>
    reasons[fn];

/**
 * Reviewed data-only extensions: their functions compute on their arguments (and read their own
 * catalogs or statistics); none opens another session, reaches the network or files, runs SQL text or
 * code named by an argument, or leaves state that outlives the read, except the functions listed in
 * `except`. Not reviewed, so refused unless listed in allowedFunctions: postgis_topology (its C
 * functions run SQL on the topology schema named by their argument, which the owner can create),
 * postgis_tiger_geocoder (plpgsql running SQL text over tables the owner loads), address_standardizer
 * (its C functions read the lexicon, gazetteer and rules tables named by their text arguments through
 * SPI: an owner's view there would run), dblink, postgres_fdw, file_fdw, adminpack, xml2 (xpath_table
 * runs SQL text), lo, pageinspect and the other server-inspection modules.
 */
export const pgReviewedExtensions: Readonly<Record<string, ReviewedExtension>> = {
  postgis: {
    why: 'geometry and geography types, their operators, indexes and spatial functions (C and SQL)',
    // SQL wrappers of plpgsql functions that run SQL text on a table named by their argument.
    except: byName({
      lockrow: 'it runs SQL text on the table named by its argument',
      checkauth: 'it creates a trigger through SQL text',
      dropgeometrytable: 'it runs DROP TABLE through SQL text',
      st_fromflatgeobuftotable: 'it creates a table named by its argument',
      postgis_svn_version: 'it runs SQL text',
    }),
  },
  postgis_raster: {
    why: 'the raster type and its functions (C and SQL)',
    except: (fn, args) => {
      // Map algebra runs an SQL expression given as text, or a callback function named by an argument.
      if (/^(st_mapalgebra|_st_mapalgebra|st_mapalgebraexpr|st_mapalgebrafct|st_mapalgebrafctngb)$/.test(fn))
        return 'it runs an SQL expression or a callback function named by its argument';
      if (
        /^(st_slope|st_aspect|st_hillshade|st_tpi|st_tri|st_roughness|_st_slope|_st_aspect|_st_hillshade)$/.test(
          fn,
        )
      )
        return 'it runs map algebra with a callback resolved on the session path';
      if (/regproc/.test(args)) return 'it runs a function named by its argument';
      // Coverage forms (ST_ValueCount('table', 'column', …)): SQL on a table named by text arguments.
      if (/^text, text\b/.test(args)) return 'it reads the table named by its arguments through SQL text';
      if (/^name, name\b/.test(args))
        return 'it changes or reads constraints of the table named by its arguments';
      return undefined;
    },
  },
  postgis_sfcgal: { why: 'SFCGAL 3D geometry functions (C)' },
  vector: { why: 'pgvector: the vector types, distances and their index methods (C)' },
  hll: {
    why: 'HyperLogLog sketches and their aggregates (C)',
    except: byName({
      hll_set_defaults: 'it changes the session defaults, which outlive the read',
      hll_set_output_version: 'it changes a session setting, which outlives the read',
      hll_set_max_sparse: 'it changes a session setting, which outlives the read',
    }),
  },
  ip4r: { why: 'IPv4/IPv6 address and range types (C)' },
  semver: { why: 'the semantic-version type (C and SQL casts)' },
  prefix: { why: 'the prefix-range type (C)' },
  citext: { why: 'the case-insensitive text type (C, internal and SQL)' },
  pg_trgm: {
    why: 'trigram similarity and its index support (C)',
    except: byName({ set_limit: 'it changes a session setting, which outlives the read' }),
  },
  hstore: { why: 'the key/value type (C)' },
  ltree: { why: 'the label-tree type (C)' },
  btree_gist: { why: 'GiST operator classes for scalar types (C)' },
  btree_gin: { why: 'GIN operator classes for scalar types (C)' },
  cube: { why: 'the cube type (C)' },
  earthdistance: { why: 'great-circle distances (C and SQL over cube)' },
  fuzzystrmatch: { why: 'string distances and phonetic codes (C)' },
  unaccent: { why: 'the unaccent dictionary and function (C)' },
  intarray: { why: 'integer-array operators and index support (C)' },
  isn: {
    why: 'EAN/ISBN/ISSN/UPC types (C and internal)',
    except: byName({ isn_weak: 'it changes a session setting, which outlives the read' }),
  },
  seg: { why: 'the line-segment type (C)' },
  'uuid-ossp': { why: 'UUID generators (C)' },
  pgcrypto: { why: 'hashes, ciphers and random bytes (C)' },
  // crosstab(text…) and connectby run SQL text given as an argument without the guard seeing it:
  // pgDenied refuses them by name before any catalog lookup.
  tablefunc: {
    why: 'normal_rand and crosstab over literal arrays (C)',
    except: (fn) => (/^(crosstab|connectby)/.test(fn) ? 'it runs SQL text given as its argument' : undefined),
  },
  // Only its read functions: the rest schedules jobs, moves chunks and changes the catalog.
  timescaledb: {
    why: "TimescaleDB's query functions and aggregates (C)",
    only: new Set([
      'time_bucket',
      'time_bucket_gapfill',
      'locf',
      'interpolate',
      'first',
      'last',
      'histogram',
      'approximate_row_count',
      'first_sfunc',
      'first_combinefunc',
      'last_sfunc',
      'last_combinefunc',
      'bookend_finalfunc',
      'bookend_serializefunc',
      'bookend_deserializefunc',
      'hist_sfunc',
      'hist_combinefunc',
      'hist_serializefunc',
      'hist_deserializefunc',
      'hist_finalfunc',
      'gapfill_marker',
      'gapfill_int16_time_bucket',
      'gapfill_int32_time_bucket',
      'gapfill_int64_time_bucket',
      'gapfill_date_time_bucket',
      'gapfill_timestamp_time_bucket',
      'gapfill_timestamptz_time_bucket',
    ]),
  },
};

/**
 * Why a reviewed extension's function `fn(args)` may run in a read (undefined: not covered), or the
 * refusal's reason (`{ refused }`). `language` as the catalog reports it; `ownerSuper`: owned by a
 * superuser, and no schema the owner can write comes before the function's own on the read's path
 * (a SQL body's unqualified names resolve on that path when it runs).
 */
export function pgExtensionVerdict(
  extension: string,
  fn: string,
  args: string,
  language: string,
  ownerSuper: boolean,
): { covered: true } | { refused: string } | undefined {
  const review = pgReviewedExtensions[extension];
  if (!review) return undefined;
  if (review.only && !review.only.has(fn)) return undefined;
  const refused = review.except?.(fn, args);
  if (refused) return { refused };
  if (language === 'c' || language === 'internal' || (language === 'sql' && ownerSuper))
    return { covered: true };
  return undefined;
}

/**
 * A PostgreSQL allowedFunctions entry as the function identity it names: each part read as an SQL
 * identifier (unquoted: folded to lower case; double-quoted: kept exactly, `""` for a quote), `name`
 * or `schema.name`. Undefined for text that is not such a name. `mark` and `"Mark"` are different
 * functions; `Mark` and `mark` are the same one.
 */
export function pgAllowedIdentity(entry: string): { schema?: string; name: string } | undefined {
  const part = /\s*(?:"((?:[^"]|"")+)"|([A-Za-z_\u0080-\uffff][A-Za-z0-9_$\u0080-\uffff]*))\s*/y;
  const parts: string[] = [];
  let at = 0;
  for (;;) {
    part.lastIndex = at;
    const m = part.exec(entry);
    if (!m) return undefined;
    // PostgreSQL folds unquoted identifiers' ASCII letters only (downcase_identifier, UTF-8).
    parts.push(
      m[1] !== undefined ? m[1].replace(/""/g, '"') : m[2].replace(/[A-Z]/g, (c) => c.toLowerCase()),
    );
    at = part.lastIndex;
    if (at === entry.length) break;
    if (entry[at] !== '.') return undefined;
    at++;
  }
  if (parts.length === 1) return { name: parts[0] };
  if (parts.length === 2) return { schema: parts[0], name: parts[1] };
  return undefined;
}

/**
 * MySQL / MariaDB built-in functions (from the servers' function references, without the ones that
 * sleep, lock, read files, wait on replication, change sequences or reveal the last insert id).
 */
export const mysqlBuiltins = new Set(
  `abs acos adddate addtime aes_decrypt aes_encrypt any_value ascii asin atan atan2 avg bin bin_to_uuid
  bit_and bit_count bit_length bit_or bit_xor cast ceil ceiling char char_length character_length charset
  coalesce coercibility collation column_check column_create column_exists column_get column_json column_list
  compress concat concat_ws connection_id conv convert convert_tz cos cot count crc32 crc32c cume_dist curdate
  current_date current_role current_time current_timestamp current_user curtime database date date_add
  date_format date_sub datediff day dayname dayofmonth dayofweek dayofyear decode default degrees dense_rank
  des_decrypt des_encrypt elt encode encrypt exp export_set extract extractvalue field find_in_set first_value
  floor format format_bytes format_pico_time found_rows from_base64 from_days from_unixtime geomcollection
  geometrycollection get_format greatest group_concat grouping hex hour if ifnull in inet6_aton inet6_ntoa
  inet_aton inet_ntoa insert instr interval is_ipv4 is_ipv4_compat is_ipv4_mapped is_ipv6 is_uuid isnull
  json_array json_arrayagg json_array_append json_array_insert json_array_intersect json_compact json_contains
  json_contains_path json_depth json_detailed json_equals json_exists json_extract json_insert json_keys
  json_length json_loose json_merge json_merge_patch json_merge_preserve json_normalize json_object
  json_objectagg json_object_filter_keys json_object_to_array json_overlaps json_pretty json_query json_quote
  json_remove json_replace json_schema_valid json_schema_validation_report json_search json_set json_storage_free
  json_storage_size json_table json_type json_unquote json_valid json_value kdf lag last_day last_value lcase
  lead least left length linestring ln localtime localtimestamp locate log log10 log2 lower lpad ltrim make_set
  makedate maketime max md5 median microsecond mid min minute mod month monthname multilinestring multipoint
  multipolygon natural_sort_key now nth_value ntile nullif oct octet_length old_password ord percent_rank
  percentile_cont percentile_disc period_add period_diff pi point polygon position pow power quarter quote
  radians rand random_bytes rank regexp_instr regexp_like regexp_replace regexp_substr repeat replace reverse
  right round row_count row_number rpad rtrim schema sec_to_time second sformat sha sha1 sha2 sign sin
  soundex space sqrt st_area st_asbinary st_asgeojson st_astext st_aswkb st_aswkt st_buffer st_centroid
  st_contains st_convexhull st_crosses st_difference st_dimension st_disjoint st_distance st_distance_sphere
  st_endpoint st_envelope st_equals st_exteriorring st_geomfromgeojson st_geomfromtext st_geomfromwkb
  st_geometryn st_geometrytype st_interiorringn st_intersection st_intersects st_isclosed st_isempty
  st_isring st_issimple st_isvalid st_latitude st_length st_longitude st_numgeometries st_numinteriorrings
  st_numpoints st_overlaps st_pointn st_pointfromtext st_srid st_startpoint st_symdifference st_touches
  st_transform st_union st_within st_x st_y statement_digest statement_digest_text std stddev stddev_pop
  stddev_samp str_to_date strcmp subdate substr substring substring_index subtime sum sys_guid sysdate
  system_user tan time time_format time_to_sec timediff timestamp timestampadd timestampdiff to_base64
  to_char to_days to_seconds trim truncate ucase uncompress uncompressed_length unhex unix_timestamp upper
  user utc_date utc_time utc_timestamp uuid uuid_short uuid_to_bin values var_pop var_samp variance version
  week weekday weekofyear weight_string year yearweek nvl nvl2 trunc chr lengthb updatexml rownum add_months
  months_between last_value boundary buffer centroid convexhull dimension endpoint envelope exteriorring
  geometryn geometrytype glength interiorringn isclosed isempty isring issimple numgeometries
  numinteriorrings numpoints pointn pointonsurface srid startpoint area x y contains crosses disjoint equals
  intersects overlaps touches within astext aswkt asbinary aswkb geomfromtext geometryfromtext geomfromwkb
  geometryfromwkb pointfromtext pointfromwkb linefromtext linefromwkb linestringfromtext linestringfromwkb
  polyfromtext polyfromwkb polygonfromtext polygonfromwkb mpointfromtext mpointfromwkb multipointfromtext
  multipointfromwkb mlinefromtext mlinefromwkb multilinestringfromtext multilinestringfromwkb
  mpolyfromtext mpolyfromwkb multipolygonfromtext multipolygonfromwkb geomcollfromtext geomcollfromwkb
  geometrycollectionfromtext geometrycollectionfromwkb mbrcontains mbrcoveredby mbrdisjoint mbrequal
  mbrintersects mbroverlaps mbrtouches mbrwithin st_pointonsurface st_boundary st_relate st_simplify
  st_validate st_collect json_arrayagg json_key_value`.split(/\s+/),
);

/** SQL Server built-in functions (no OPENROWSET-style remote access, no extended procedures). */
export const mssqlBuiltins = new Set(
  `abs acos app_name approx_count_distinct ascii asin atan atn2 avg cast ceiling char charindex checksum
  checksum_agg choose coalesce col_length col_name columnproperty concat concat_ws convert cos cot count
  count_big cume_dist current_timestamp current_user cursor_status datalength date_bucket dateadd datediff
  datediff_big datefromparts datename datepart datetime2fromparts datetimefromparts datetimeoffsetfromparts
  datetrunc day db_id db_name degrees dense_rank difference eomonth error_message exp first_value floor format
  formatmessage getdate getutcdate greatest grouping grouping_id hashbytes host_name iif isdate isjson isnull
  isnumeric json_array json_modify json_object json_path_exists json_query json_value lag last_value lead
  least left len log log10 lower ltrim max min month nchar newid newsequentialid ntile nullif object_id
  object_name object_schema_name parse parsename patindex percent_rank percentile_cont percentile_disc pi
  power quotename radians rand rank replace replicate reverse right round row_number rtrim schema_id
  schema_name scope_identity session_user sign sin smalldatetimefromparts soundex space sqrt square stdev
  stdevp str string_agg string_escape string_split stuff substring sum suser_name suser_sname switchoffset
  sysdatetime sysdatetimeoffset system_user sysutcdatetime tan timefromparts todatetimeoffset translate trim
  try_cast try_convert try_parse type_id type_name unicode upper user_name var varp year generate_series
  openjson has_perms_by_name has_dbaccess is_member is_rolemember is_srvrolemember objectproperty
  objectpropertyex indexproperty indexkey_property databaseproperty databasepropertyex serverproperty
  collationproperty typeproperty object_definition original_login suser_id user_id ident_current ident_seed
  ident_incr file_name filegroup_name fileproperty db_name database_principal_id sessionproperty
  context_info session_context error_number compress decompress bit_count left_shift right_shift get_bit
  set_bit dateadd datename eomonth string_split trim ltrim rtrim`.split(/\s+/),
);

/** SQLite built-in scalar, aggregate, window, date and JSON functions and read-only table-valued ones. */
export const sqliteBuiltins = new Set(
  `abs acos acosh asin asinh atan atan2 atanh avg ceil ceiling changes char coalesce concat concat_ws cos
  cosh count cume_dist current_date current_time current_timestamp date datetime degrees dense_rank exp
  first_value floor format glob group_concat hex if ifnull iif instr json json_array json_array_insert
  json_array_length json_error_position json_extract json_group_array json_group_object json_insert
  json_object json_patch json_pretty json_quote json_remove json_replace json_set json_type json_valid jsonb
  jsonb_array jsonb_array_insert jsonb_extract jsonb_group_array jsonb_group_object jsonb_insert jsonb_object
  jsonb_patch jsonb_remove jsonb_replace jsonb_set julianday lag last_insert_rowid last_value lead length
  like likelihood likely ln log log10 log2 lower ltrim max median min mod nth_value ntile nullif octet_length
  percent_rank percentile percentile_cont percentile_disc pi pow power printf quote radians random
  randomblob rank replace round row_number rtrim sign sin sinh sqlite_compileoption_get
  sqlite_compileoption_used sqlite_source_id sqlite_version sqrt strftime string_agg substr substring
  subtype sum tan tanh time timediff total total_changes trim trunc typeof unhex unicode unistr unistr_quote
  unixepoch unlikely upper zeroblob highlight snippet bm25 match offsets matchinfo json_each json_tree
  jsonb_each jsonb_tree generate_series pragma_table_info pragma_table_xinfo pragma_table_list
  pragma_index_list pragma_index_info pragma_index_xinfo pragma_foreign_key_list
  pragma_collation_list pragma_function_list pragma_module_list pragma_pragma_list pragma_compile_options`.split(
    /\s+/,
  ),
);

/** Names always refused on the other dialects (also when listed in allowedFunctions). */
const otherDenied: Record<'mysql' | 'mssql' | 'sqlite', (name: string) => boolean> = {
  mysql: pattern([
    'sleep',
    'benchmark',
    'get_lock',
    'release_lock',
    'release_all_locks',
    'is_free_lock',
    'is_used_lock',
    'load_file',
    'master_pos_wait',
    'master_gtid_wait',
    'source_pos_wait',
    'wait_for_executed_gtid_set',
    'wait_until_sql_thread_after_gtids',
    'nextval',
    'setval',
    'lastval',
    'sys_exec',
    'sys_eval',
    'last_insert_id',
  ]),
  mssql: pattern(['openrowset', 'openquery', 'opendatasource', 'openxml', 'sp_*', 'xp_*']),
  sqlite: pattern([
    'load_extension',
    'readfile',
    'writefile',
    'edit',
    'fts3_tokenizer',
    'zipfile',
    'sqlite_log',
  ]),
};

export type OtherDialect = 'mysql' | 'mssql' | 'sqlite';

/** True for names refused on `dialect` whatever the connection allows. */
export const isOtherDenied = (dialect: OtherDialect, name: string) =>
  otherDenied[dialect](name.toLowerCase());

/**
 * Why a call is refused on MySQL/MariaDB, SQL Server or SQLite, or undefined when it may run.
 * `parts` is the written name (schema/database first), as the server folds it.
 */
export function otherFunctionProblem(
  dialect: OtherDialect,
  parts: string[],
  allowedFunctions: readonly string[] = [],
): string | undefined {
  const name = parts[parts.length - 1].toLowerCase();
  const full = parts.map((p) => p.toLowerCase()).join('.');
  if (otherDenied[dialect](name)) return 'it sleeps, locks, reads files or runs text the guard cannot verify';
  const builtins = dialect === 'mysql' ? mysqlBuiltins : dialect === 'mssql' ? mssqlBuiltins : sqliteBuiltins;
  if (parts.length === 1 && builtins.has(name)) return undefined;
  if (
    dialect !== 'sqlite' &&
    allowedFunctions.some((a) => a.toLowerCase() === full || a.toLowerCase() === name)
  )
    return undefined;
  if (dialect === 'sqlite') return 'only SQLite built-in functions can run here';
  return "it is not a built-in function; an admin can allow a stored function by listing it in the connection's allowedFunctions";
}
