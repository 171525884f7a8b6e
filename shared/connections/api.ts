import * as z from 'zod/mini';
import { endpoint, once } from '../http/endpoint';
import { Deleted, describe, IdParams, PageQuery } from '../http/schemas';
import { DbTypeSchema, QueryResult } from './schemas';

/** Endpoint specs and request/response schemas of the Connections capability. */

export { DB_TYPES, DbTypeSchema, QueryResult } from './schemas';

const host = z.string().check(
  z.trim(),
  z.maxLength(255),
  z.refine((h) => !/\s/.test(h) && !h.includes('://') && !h.includes('/'), {
    message: 'host must be a hostname or IP address, without scheme, path or spaces',
  }),
);
const port = z.number().check(z.int(), z.gte(1), z.lte(65535));
const database = z.string().check(z.trim(), z.minLength(1), z.maxLength(1024));
const username = z.string().check(z.maxLength(255));
const password = z.string().check(z.maxLength(4096));
/** Stored functions reads may call (issues 8, 23): `name` or `schema.name`; PostgreSQL, MySQL/MariaDB and SQL Server. */
const allowedFunctions = describe(
  z
    .array(
      z.string().check(
        z.trim(),
        z.maxLength(128),
        // Each part an SQL identifier: unquoted (folded to lower case) or double-quoted (kept exactly, "" for ").
        z.regex(
          /^([A-Za-z_][A-Za-z0-9_$]*|"([^".]|"")+")(\.([A-Za-z_][A-Za-z0-9_$]*|"([^".]|"")+"))?$/,
          'a function name or schema.name (letters, digits, _ and $; a double-quoted part keeps its case)',
        ),
      ),
    )
    .check(z.maxLength(100)),
  'Extension: stored (user-defined) functions the read-only guard lets reads call on POSTGRES, MYSQL, MARIADB and MSSQL connections (`name` or `schema.name`, each part an SQL identifier: unquoted parts fold to lower case, a double-quoted part such as `"Mark"` names exactly that function); built-ins (and on POSTGRES the reviewed extensions\' functions) need no listing, every other function is refused whatever its volatility label, and functions that sleep, lock, read files or run SQL text stay refused',
);

export const ConnectionCreate = z.object({
  name: z.string().check(z.trim(), z.minLength(1), z.maxLength(200)),
  type: DbTypeSchema,
  host: z.optional(z.nullable(host)),
  port: z.optional(z.nullable(port)),
  database: z.optional(database),
  username: z.optional(z.nullable(username)),
  password: describe(z.optional(z.nullable(password)), 'Write-only; never returned'),
  encryptedPassword: describe(z.optional(z.nullable(password)), 'Alias of password'),
  sslEnabled: describe(z.optional(z.boolean()), 'Default false'),
  ssl: describe(z.optional(z.boolean()), 'Alias of sslEnabled'),
  readOnly: describe(
    z._default(z.boolean(), true),
    'Extension: only approved queries may write, and only when readOnly is false',
  ),
  allowedFunctions: z.optional(allowedFunctions),
});
export type ConnectionCreate = z.output<typeof ConnectionCreate>;

export const ConnectionUpdate = z.object({
  name: z.optional(z.string().check(z.trim(), z.minLength(1), z.maxLength(200))),
  type: z.optional(DbTypeSchema),
  host: z.optional(z.nullable(host)),
  port: z.optional(z.nullable(port)),
  database: z.optional(database),
  username: z.optional(z.nullable(username)),
  password: describe(z.optional(z.nullable(password)), 'Write-only; null clears it'),
  encryptedPassword: describe(z.optional(z.nullable(password)), 'Alias of password'),
  sslEnabled: z.optional(z.boolean()),
  ssl: describe(z.optional(z.boolean()), 'Alias of sslEnabled'),
  readOnly: z.optional(z.boolean()),
  isActive: z.optional(z.boolean()),
  allowedFunctions: z.optional(allowedFunctions),
});
export type ConnectionUpdate = z.output<typeof ConnectionUpdate>;

export const DiagnosisSchema = once(() =>
  z.object({
    stage: z.string(),
    fault: describe(z.string(), 'user, server, third-party or us'),
    title: z.string(),
    explanation: z.string(),
    fixSteps: z.array(z.string()),
    retryable: z.boolean(),
  }),
);

export const Connection = once(() =>
  z.object({
    id: z.string(),
    name: z.string(),
    type: DbTypeSchema,
    host: z.string(),
    port: z.nullable(z.number().check(z.int())),
    database: z.string(),
    username: z.string(),
    sslEnabled: z.boolean(),
    readOnly: z.boolean(),
    allowedFunctions: describe(z.array(z.string()), 'Extension: stored functions reads may call'),
    isActive: z.boolean(),
    lastTestedAt: z.nullable(z.string()),
    lastError: z.nullable(z.string()),
    lastErrorDiagnosis: z.nullable(DiagnosisSchema()),
    schemaUpdatedAt: z.nullable(z.string()),
    createdAt: z.string(),
    updatedAt: z.string(),
  }),
);

/** One way a PostgreSQL role can change something a read-only transaction does not contain. */
export const ReadEscape = once(() =>
  z.object({
    kind: describe(
      z.string(),
      'superuser, replication, server-role, privileged-function, extension, c-function, untrusted-language, foreign-server, foreign-table or security-definer',
    ),
    object: describe(z.string(), 'The role, function, extension, foreign server or table'),
    detail: z.string(),
    revoke: describe(
      z.array(z.string()),
      'Statements an administrator can run (as the owner or a superuser) to close this escape',
    ),
  }),
);

export const ReadSafety = once(() =>
  z.object({
    mode: describe(
      z.enum(['open', 'strict', 'not-applicable']),
      "open: the role reaches no escape, reads rest on PostgreSQL's read-only transaction alone; strict: every read is also checked against the catalog (owner code needs allowedFunctions); not-applicable: not a PostgreSQL connection",
    ),
    escapes: z.array(ReadEscape()),
    explanation: z.string(),
    checkedAt: z.nullable(z.string()),
  }),
);

export const TestResult = once(() =>
  z.object({
    success: z.boolean(),
    latency: describe(z.number(), 'Milliseconds'),
    message: z.string(),
    schemaIntrospected: z.boolean(),
    tableCount: z.optional(z.number().check(z.int())),
    schemaError: z.optional(z.string()),
    readSafety: describe(
      z.optional(ReadSafety()),
      'PostgreSQL, on success: the read mode and the escapes the role reaches (as GET /connections/{id}/read-safety)',
    ),
  }),
);

const ColumnSchema = once(() =>
  z.object({
    name: z.string(),
    type: z.string(),
    nullable: z.boolean(),
    primaryKey: z.boolean(),
    comment: describe(
      z.optional(z.string().check(z.maxLength(300))),
      "The database's own comment on the column (cleaned, at most 300 characters); absent when none",
    ),
  }),
);
export const TableSchema = once(() =>
  z.object({
    name: z.string(),
    schema: z.optional(z.string()),
    kind: z.enum(['table', 'view', 'collection']),
    columns: z.array(ColumnSchema()),
    primaryKey: z.array(z.string()),
    foreignKeys: z.array(
      z.object({
        columns: z.array(z.string()),
        referencedTable: z.string(),
        referencedColumns: z.array(z.string()),
      }),
    ),
    rowEstimate: z.nullable(z.number()),
    comment: describe(
      z.optional(z.string().check(z.maxLength(300))),
      "The database's own comment on the table or view (cleaned, at most 300 characters); absent when none",
    ),
  }),
);
export const SchemaResult = once(() =>
  z.object({
    schema: z.object({ tables: z.array(TableSchema()) }),
    schemaSummary: z.nullable(z.string()),
    schemaUpdatedAt: z.string(),
  }),
);

export const QueryRequest = z.object({
  sql: z.string().check(z.minLength(1), z.maxLength(100_000)),
  question: z.optional(z.string().check(z.maxLength(2000))),
  maxRows: describe(z.optional(z.number().check(z.int(), z.gte(1), z.lte(10_000))), 'Row cap, default 1000'),
});
/** What ran an entry of the query history (the `source` of QueryHistoryEntry and the history's filter). */
export const QUERY_SOURCES = [
  'query',
  'widget',
  'saved_query',
  'metric',
  'chat',
  'approval',
  'workflow',
  'mcp',
] as const;
const sourceList = new RegExp(`^(${QUERY_SOURCES.join('|')})(,(${QUERY_SOURCES.join('|')}))*$`);
export const QueryHistoryQuery = z.extend(PageQuery, {
  source: describe(
    z.optional(
      z.pipe(
        z
          .string()
          .check(
            z.maxLength(200),
            z.regex(sourceList, `source must be one or more of ${QUERY_SOURCES.join(', ')}, comma-separated`),
          ),
        z.transform((v) => [...new Set(v.split(','))] as Array<(typeof QUERY_SOURCES)[number]>),
      ),
    ),
    `Only entries with these sources: one or more of ${QUERY_SOURCES.join(', ')}, comma-separated (e.g. \`query\` for ad-hoc queries only, \`widget\` for dashboard widget loads only). \`total\` counts the matching entries.`,
  ),
});
export type QueryHistoryQuery = z.output<typeof QueryHistoryQuery>;
export const QueryAuthor = once(() =>
  z.object({
    id: z.string(),
    name: describe(z.nullable(z.string()), "The user's name as the members API shows it; null if unknown"),
    email: describe(z.nullable(z.string()), "The user's email as the members API shows it; null if unknown"),
    removed: describe(z.boolean(), 'The user has since been removed from the organization'),
  }),
);
export const QueryHistoryEntry = once(() =>
  z.object({
    id: z.string(),
    connectionId: z.string(),
    sequence: z.number().check(z.int()),
    source: describe(
      z.enum(QUERY_SOURCES),
      'What ran it: `query` an ad-hoc statement (POST /connections/{id}/query), `widget` a dashboard widget load, `saved_query`, `metric`, `chat` the assistant, `approval` an approved submission, `workflow` a workflow step, `mcp` the MCP tool run_query',
    ),
    question: z.nullable(z.string()),
    sql: z.string(),
    status: z.enum(['SUCCESS', 'FAILED', 'REJECTED', 'TIMEOUT']),
    rowCount: z.nullable(z.number().check(z.int())),
    executionTime: z.nullable(z.number()),
    truncated: z.boolean(),
    error: z.nullable(z.string()),
    errorCode: z.nullable(z.string()),
    userId: describe(
      z.nullable(z.string()),
      'The id of the user whose key ran it (an approval: the submitter; a scheduled workflow run: its publisher); null if the entry does not say (shown only to admins)',
    ),
    author: describe(
      z.nullable(QueryAuthor()),
      'Extension: who ran it (`userId` with the name and email of that user); null when the entry names no user',
    ),
    createdAt: z.string(),
  }),
);

const tableName = z.string().check(z.trim(), z.minLength(1), z.maxLength(256));
const columnName = z.string().check(z.trim(), z.minLength(1), z.maxLength(256));
export const AnnotationCreate = z.object({
  tableName,
  columnName: z.optional(z.nullable(columnName)),
  annotation: z.string().check(z.trim(), z.minLength(1), z.maxLength(10_000)),
  dataType: z.optional(z.nullable(z.string().check(z.trim(), z.maxLength(200)))),
  examples: z.optional(z.nullable(z.string().check(z.maxLength(2000)))),
  sampleValues: describe(
    z.optional(z.boolean()),
    "Extension: false = this column's values (a table annotation: all its columns') are never read for the value index or automatic annotation; default true",
  ),
});
export type AnnotationCreate = z.output<typeof AnnotationCreate>;
export const AnnotationUpdate = z
  .object({
    annotation: z.optional(z.string().check(z.trim(), z.minLength(1), z.maxLength(10_000))),
    dataType: z.optional(z.nullable(z.string().check(z.trim(), z.maxLength(200)))),
    examples: z.optional(z.nullable(z.string().check(z.maxLength(2000)))),
    sampleValues: z.optional(z.boolean()),
  })
  .check(
    z.refine((b) => Object.keys(b).length > 0, {
      message: 'Give at least one of annotation, dataType, examples, sampleValues',
    }),
  );
export type AnnotationUpdate = z.output<typeof AnnotationUpdate>;
export const Annotation = once(() =>
  z.object({
    id: z.string(),
    connectionId: z.string(),
    tableName: z.string(),
    columnName: z.nullable(z.string()),
    annotation: z.string(),
    dataType: z.nullable(z.string()),
    examples: z.nullable(z.string()),
    source: describe(z.enum(['user', 'auto']), 'Extension: auto annotations never overwrite user ones'),
    sampleValues: describe(
      z.boolean(),
      "Extension: false when the column's (or table's) values are never read for the value index",
    ),
    createdAt: z.string(),
    updatedAt: z.string(),
  }),
);
export const AutoAnnotationRequest = z.object({
  tables: describe(
    z.optional(z.array(tableName).check(z.minLength(1), z.maxLength(1000))),
    'Omit to annotate all tables',
  ),
});
export const AutoAnnotationResult = once(() =>
  z.object({
    message: z.string(),
    connectionId: z.string(),
    tables: z.array(z.string()),
    tableCount: z.number().check(z.int()),
  }),
);

const AnnotationParams = z.object({
  id: z.string().check(z.minLength(1), z.maxLength(200)),
  annotationId: z.string().check(z.minLength(1), z.maxLength(200)),
});
const AnnotationQuery = z.extend(PageQuery, {
  table: z.optional(z.string().check(z.minLength(1), z.maxLength(256))),
});

const tag = 'Connections';

export const listConnections = endpoint({
  method: 'GET',
  path: '/connections',
  tag,
  summary: 'List connections (admins: all of the organization; members: assigned ones)',
  scope: 'connections',
  query: PageQuery,
  response: () => z.array(Connection()),
  paginated: true,
});
export const createConnection = endpoint({
  method: 'POST',
  path: '/connections',
  tag,
  summary: 'Register a database connection (password encrypted, never returned)',
  scope: 'connections',
  admin: true,
  body: ConnectionCreate,
  status: 201,
  response: Connection,
});
export const getConnection = endpoint({
  method: 'GET',
  path: '/connections/{id}',
  tag,
  summary: 'Get a connection',
  scope: 'connections',
  params: IdParams,
  response: Connection,
});
export const updateConnection = endpoint({
  method: 'PATCH',
  path: '/connections/{id}',
  tag,
  summary: 'Update a connection',
  scope: 'connections',
  admin: true,
  params: IdParams,
  body: ConnectionUpdate,
  response: Connection,
});
export const deleteConnection = endpoint({
  method: 'DELETE',
  path: '/connections/{id}',
  tag,
  summary: 'Delete a connection with its annotations, cached schema and query history',
  scope: 'connections',
  admin: true,
  params: IdParams,
  response: Deleted,
});
export const testConnection = endpoint({
  method: 'POST',
  path: '/connections/{id}/test',
  tag,
  summary: 'Test a connection (caches the schema on the first success)',
  scope: 'connections',
  params: IdParams,
  response: TestResult,
  errors: [422],
});
export const getReadSafety = endpoint({
  method: 'GET',
  path: '/connections/{id}/read-safety',
  tag,
  summary:
    "What the connection's role can reach beyond a read-only transaction, and so how its reads are checked",
  scope: 'connections',
  params: IdParams,
  response: ReadSafety,
  errors: [422],
});
export const getSchema = endpoint({
  method: 'GET',
  path: '/connections/{id}/schema',
  tag,
  summary: 'The cached schema (404 until it has been introspected)',
  scope: 'connections',
  params: IdParams,
  response: SchemaResult,
});
export const refreshSchema = endpoint({
  method: 'POST',
  path: '/connections/{id}/schema',
  tag,
  summary: 'Re-introspect the schema from the live database and cache it',
  scope: 'connections',
  params: IdParams,
  response: SchemaResult,
  errors: [422],
});
export const runQuery = endpoint({
  method: 'POST',
  path: '/connections/{id}/query',
  tag,
  summary: 'Run one read-only SQL statement',
  scope: 'query',
  params: IdParams,
  body: QueryRequest,
  response: QueryResult,
  errors: [422, 504],
});
export const listQueries = endpoint({
  method: 'GET',
  path: '/connections/{id}/queries',
  tag,
  summary: 'Query history of a connection, newest first',
  scope: 'query',
  params: IdParams,
  query: QueryHistoryQuery,
  response: () => z.array(QueryHistoryEntry()),
  paginated: true,
});
export const listAnnotations = endpoint({
  method: 'GET',
  path: '/connections/{id}/annotations',
  tag,
  summary: 'List annotations (optionally of one table)',
  scope: 'connections',
  params: IdParams,
  query: AnnotationQuery,
  response: () => z.array(Annotation()),
  paginated: true,
});
export const createAnnotation = endpoint({
  method: 'POST',
  path: '/connections/{id}/annotations',
  tag,
  summary: 'Create or update (upsert on tableName + columnName) an annotation',
  scope: 'connections',
  params: IdParams,
  body: AnnotationCreate,
  status: 201,
  response: Annotation,
});
export const autoAnnotate = endpoint({
  method: 'POST',
  path: '/connections/{id}/annotations/auto',
  tag,
  summary: 'Queue automatic annotation of tables from the cached schema and sampled values',
  scope: 'connections',
  params: IdParams,
  body: AutoAnnotationRequest,
  bodyOptional: true,
  status: 202,
  response: AutoAnnotationResult,
  errors: [412],
});
export const getAnnotation = endpoint({
  method: 'GET',
  path: '/connections/{id}/annotations/{annotationId}',
  tag,
  summary: 'Get an annotation',
  scope: 'connections',
  params: AnnotationParams,
  response: Annotation,
});
export const updateAnnotation = endpoint({
  method: 'PATCH',
  path: '/connections/{id}/annotations/{annotationId}',
  tag,
  summary: 'Update an annotation',
  scope: 'connections',
  params: AnnotationParams,
  body: AnnotationUpdate,
  response: Annotation,
});
export const deleteAnnotation = endpoint({
  method: 'DELETE',
  path: '/connections/{id}/annotations/{annotationId}',
  tag,
  summary: 'Delete an annotation',
  scope: 'connections',
  params: AnnotationParams,
  response: Deleted,
});

export const connectionEndpoints = [
  listConnections,
  createConnection,
  getConnection,
  updateConnection,
  deleteConnection,
  testConnection,
  getReadSafety,
  getSchema,
  refreshSchema,
  runQuery,
  listQueries,
  listAnnotations,
  createAnnotation,
  autoAnnotate,
  getAnnotation,
  updateAnnotation,
  deleteAnnotation,
];
