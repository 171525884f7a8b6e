/** The one interface every database adapter implements (PostgreSQL, MySQL/MariaDB, SQL Server, MongoDB, SQLite). */
import type { DbType } from '../../guard/dialect';

export type { DbType };

export interface ConnectionTarget {
  /** Identifies the pool; a change of any field (or `version`) rebuilds it. */
  id: string;
  version: string;
  /** The owning organization (SQLite sources are confined to its folder / S3 prefix). */
  orgId?: string;
  type: DbType;
  host: string;
  port: number | null;
  database: string;
  username: string;
  password: string;
  sslEnabled: boolean;
  /** Stored functions the read-only guard lets reads call (MySQL/MariaDB, SQL Server); not a pool setting. */
  allowedFunctions?: string[];
}

export interface QueryOptions {
  /** Row cap; more rows set `truncated`. */
  maxRows: number;
  /** Cap on the JSON size of the rows. */
  maxBytes: number;
  timeoutMs: number;
  /** Positional parameters bound by the driver ($1 / ? / @p1), never spliced into the text. */
  params?: unknown[];
  /** Run inside a read-only transaction or session where the database has one (default true). */
  readOnly?: boolean;
  /**
   * What the read-only guard found (guard/read.ts `assertReadOnly`); drivers read SELECT/VALUES
   * through a cursor and other reads (EXPLAIN, SHOW) with a plain query. Absent: treated as SELECT.
   */
  kind?: 'select' | 'values' | 'explain' | 'show' | 'describe' | 'pragma' | 'mongo';
  /**
   * Set by runReadOnly when the guard admitted only reviewed built-in code (the connection allows no
   * function by name), so the read cannot leave session state past the end of its transaction: the
   * PostgreSQL adapter then skips its session reset (DISCARD ALL). Absent: the session is reset.
   */
  leavesNoSessionState?: boolean;
  /**
   * PostgreSQL reads: one SELECT of our own text (the guard's catalog check, guard/postgres-catalog.ts)
   * run in the read's transaction just before the statement, in the read's first message. Its first row
   * goes to `onRow`. When it fails, the statement does not run and the read fails with its error, marked
   * `inPreCheck: true`.
   */
  preCheck?: { sql: string; onRow(row: Record<string, unknown>): void };
  /**
   * Loupe's own SQL (catalog checks, the escape inventory, value and annotation samples): PostgreSQL
   * runs it with JIT off, so that a large catalog or table is never compiled by LLVM for seconds. A
   * user's statement keeps the database's own settings (only the pre-check before it runs without JIT).
   */
  ownQuery?: boolean;
  /**
   * PostgreSQL open mode (guard/postgres-escapes.ts): the reset after the read releases session advisory
   * locks and prepared statements only (drivers/postgres.ts LIGHT_RESET), the state a rolled-back
   * read-only transaction can leave, instead of DISCARD ALL and the session settings.
   */
  lightReset?: boolean;
}

export interface QueryResult {
  columns: string[];
  /** JSON-safe values: big integers and decimals as strings, dates as ISO strings, binary as base64. */
  rows: Record<string, unknown>[];
  rowCount: number;
  executionTime: number;
  truncated?: boolean;
  /** Writes (`readOnly: false`) only: rows the statement inserted, updated or deleted. */
  rowsAffected?: number;
}

export interface ColumnInfo {
  name: string;
  type: string;
  nullable: boolean;
  primaryKey: boolean;
  /** The database's own comment on the column (bounded, control characters removed; see comments.ts). */
  comment?: string;
}

export interface ForeignKeyInfo {
  columns: string[];
  referencedTable: string;
  referencedColumns: string[];
}

export interface TableInfo {
  /** Qualified where the database has schemas (`public.accounts` shows as `accounts` for the default schema). */
  name: string;
  schema?: string;
  kind: 'table' | 'view' | 'collection';
  columns: ColumnInfo[];
  primaryKey: string[];
  foreignKeys: ForeignKeyInfo[];
  rowEstimate: number | null;
  /** The database's own comment on the table or view (bounded, control characters removed; see comments.ts). */
  comment?: string;
}

export interface SchemaSnapshot {
  tables: TableInfo[];
}

export interface Driver {
  /** Opens (or reuses) the pool and runs a trivial round trip. */
  ping(): Promise<{ latencyMs: number; serverVersion?: string }>;
  /**
   * Reads the schema within `timeoutMs` (default: the statement timeout, LOUPE_DB_STATEMENT_TIMEOUT_MS).
   * `maxColumns` (PostgreSQL): the sync's column bound (MAX_SCHEMA_COLUMNS; lower in tests).
   */
  introspect(opts?: { timeoutMs?: number; maxColumns?: number }): Promise<SchemaSnapshot>;
  query(text: string, opts: QueryOptions): Promise<QueryResult>;
  close(): Promise<void>;
}
