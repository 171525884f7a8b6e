import type { PgCalls } from './postgres-grammar';

/** What the guard answers: the kind of read, and the calls the connection's function rule still checks. */
export type ReadKind = 'select' | 'values' | 'explain' | 'show' | 'describe' | 'pragma' | 'mongo';

export interface ReadStatement {
  kind: ReadKind;
}

/** What the guard verified, with the calls the function rule still has to check per connection. */
export interface VerifiedRead extends ReadStatement {
  /** PostgreSQL: functions, operators and field names for the catalog check (postgres-catalog.ts). */
  pg?: PgCalls;
  /** Other SQL dialects: every called function's name parts (schema first), lower-cased. */
  calls?: string[][];
}

export interface GuardOptions {
  /** Stored functions the connection's admin allows (MySQL/MariaDB, SQL Server). */
  allowedFunctions?: readonly string[];
}

/** One dialect's whole check, from text to verdict (read.ts picks it by the connection's type). */
export interface DialectCheck {
  /** Loads (once) the parsers the check needs, so that `check` can run synchronously. */
  load(): Promise<void>;
  /** Verifies `text` as one read of this dialect, or throws 400 READ_ONLY_VIOLATION. */
  check(text: string, depth?: number): VerifiedRead;
}
