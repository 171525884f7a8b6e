import * as z from 'zod';
import { endpoint, once } from '../http/endpoint';
import { Deleted, IdParams, PageQuery } from '../http/schemas';
import { DbTypeSchema, QueryResult } from './schemas';

/** Endpoint specs and request/response schemas of the Connections capability. */

export { DB_TYPES, DbTypeSchema, QueryResult } from './schemas';

const host = z
  .string()
  .trim()
  .max(255)
  .refine((h) => !/\s/.test(h) && !h.includes('://') && !h.includes('/'), {
    message: 'host must be a hostname or IP address, without scheme, path or spaces',
  });
const port = z.number().int().min(1).max(65535);
const database = z.string().trim().min(1).max(1024);
const username = z.string().max(255);
const password = z.string().max(4096);
/** Stored functions reads may call (issue 8): `name` or `schema.name`, MySQL/MariaDB and SQL Server only. */
const allowedFunctions = z
  .array(
    z
      .string()
      .trim()
      .max(128)
      .regex(
        /^[A-Za-z_][A-Za-z0-9_$]*(\.[A-Za-z_][A-Za-z0-9_$]*)?$/,
        'a function name or schema.name (letters, digits, _ and $)',
      ),
  )
  .max(100)
  .describe(
    'Extension: stored (user-defined) functions the read-only guard lets reads call on MYSQL, MARIADB and MSSQL connections (`name` or `schema.name`); built-ins need no listing, and functions that sleep, lock or read files stay refused',
  );

export const ConnectionCreate = z.object({
  name: z.string().trim().min(1).max(200),
  type: DbTypeSchema,
  host: host.nullable().optional(),
  port: port.nullable().optional(),
  database: database.optional(),
  username: username.nullable().optional(),
  password: password.nullable().optional().describe('Write-only; never returned'),
  encryptedPassword: password.nullable().optional().describe('Alias of password'),
  sslEnabled: z.boolean().optional().describe('Default false'),
  ssl: z.boolean().optional().describe('Alias of sslEnabled'),
  readOnly: z
    .boolean()
    .default(true)
    .describe('Extension: only approved queries may write, and only when readOnly is false'),
  allowedFunctions: allowedFunctions.optional(),
});
export type ConnectionCreate = z.output<typeof ConnectionCreate>;

export const ConnectionUpdate = z.object({
  name: z.string().trim().min(1).max(200).optional(),
  type: DbTypeSchema.optional(),
  host: host.nullable().optional(),
  port: port.nullable().optional(),
  database: database.optional(),
  username: username.nullable().optional(),
  password: password.nullable().optional().describe('Write-only; null clears it'),
  encryptedPassword: password.nullable().optional().describe('Alias of password'),
  sslEnabled: z.boolean().optional(),
  ssl: z.boolean().optional().describe('Alias of sslEnabled'),
  readOnly: z.boolean().optional(),
  isActive: z.boolean().optional(),
  allowedFunctions: allowedFunctions.optional(),
});
export type ConnectionUpdate = z.output<typeof ConnectionUpdate>;

export const DiagnosisSchema = once(() =>
  z.object({
    stage: z.string(),
    fault: z.string().describe('user, server, third-party or us'),
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
    port: z.number().int().nullable(),
    database: z.string(),
    username: z.string(),
    sslEnabled: z.boolean(),
    readOnly: z.boolean(),
    allowedFunctions: z.array(z.string()).describe('Extension: stored functions reads may call'),
    isActive: z.boolean(),
    lastTestedAt: z.string().nullable(),
    lastError: z.string().nullable(),
    lastErrorDiagnosis: DiagnosisSchema().nullable(),
    schemaUpdatedAt: z.string().nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
  }),
);

export const TestResult = once(() =>
  z.object({
    success: z.boolean(),
    latency: z.number().describe('Milliseconds'),
    message: z.string(),
    schemaIntrospected: z.boolean(),
    tableCount: z.number().int().optional(),
    schemaError: z.string().optional(),
  }),
);

const ColumnSchema = once(() =>
  z.object({
    name: z.string(),
    type: z.string(),
    nullable: z.boolean(),
    primaryKey: z.boolean(),
    comment: z
      .string()
      .max(300)
      .optional()
      .describe(
        "The database's own comment on the column (cleaned, at most 300 characters); absent when none",
      ),
  }),
);
const TableSchema = once(() =>
  z.object({
    name: z.string(),
    schema: z.string().optional(),
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
    rowEstimate: z.number().nullable(),
    comment: z
      .string()
      .max(300)
      .optional()
      .describe(
        "The database's own comment on the table or view (cleaned, at most 300 characters); absent when none",
      ),
  }),
);
export const SchemaResult = once(() =>
  z.object({
    schema: z.object({ tables: z.array(TableSchema()) }),
    schemaSummary: z.string().nullable(),
    schemaUpdatedAt: z.string(),
  }),
);

export const QueryRequest = z.object({
  sql: z.string().min(1).max(100_000),
  question: z.string().max(2000).optional(),
  maxRows: z.number().int().min(1).max(10_000).optional().describe('Row cap, default 1000'),
});
export const QueryHistoryEntry = once(() =>
  z.object({
    id: z.string(),
    connectionId: z.string(),
    sequence: z.number().int(),
    source: z.string(),
    question: z.string().nullable(),
    sql: z.string(),
    status: z.enum(['SUCCESS', 'FAILED', 'REJECTED', 'TIMEOUT']),
    rowCount: z.number().int().nullable(),
    executionTime: z.number().nullable(),
    truncated: z.boolean(),
    error: z.string().nullable(),
    errorCode: z.string().nullable(),
    userId: z.string(),
    createdAt: z.string(),
  }),
);

const tableName = z.string().trim().min(1).max(256);
const columnName = z.string().trim().min(1).max(256);
export const AnnotationCreate = z.object({
  tableName,
  columnName: columnName.nullable().optional(),
  annotation: z.string().trim().min(1).max(10_000),
  dataType: z.string().trim().max(200).nullable().optional(),
  examples: z.string().max(2000).nullable().optional(),
});
export type AnnotationCreate = z.output<typeof AnnotationCreate>;
export const AnnotationUpdate = z
  .object({
    annotation: z.string().trim().min(1).max(10_000).optional(),
    dataType: z.string().trim().max(200).nullable().optional(),
    examples: z.string().max(2000).nullable().optional(),
  })
  .refine((b) => Object.keys(b).length > 0, {
    message: 'Give at least one of annotation, dataType, examples',
  });
export type AnnotationUpdate = z.output<typeof AnnotationUpdate>;
export const Annotation = once(() =>
  z.object({
    id: z.string(),
    connectionId: z.string(),
    tableName: z.string(),
    columnName: z.string().nullable(),
    annotation: z.string(),
    dataType: z.string().nullable(),
    examples: z.string().nullable(),
    source: z.enum(['user', 'auto']).describe('Extension: auto annotations never overwrite user ones'),
    createdAt: z.string(),
    updatedAt: z.string(),
  }),
);
export const AutoAnnotationRequest = z.object({
  tables: z.array(tableName).min(1).max(1000).optional().describe('Omit to annotate all tables'),
});
export const AutoAnnotationResult = once(() =>
  z.object({
    message: z.string(),
    connectionId: z.string(),
    tables: z.array(z.string()),
    tableCount: z.number().int(),
  }),
);

const AnnotationParams = z.object({
  id: z.string().min(1).max(200),
  annotationId: z.string().min(1).max(200),
});
const AnnotationQuery = PageQuery.extend({ table: z.string().min(1).max(256).optional() });

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
  query: PageQuery,
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
