/**
 * The second grammar for MySQL/MariaDB, SQL Server and SQLite: datafusion-sqlparser-rs compiled to
 * WebAssembly (@guanmingchiu/sqlparser-ts). The guard consults it when node-sql-parser rejects a
 * statement (window functions on SQLite, some MySQL forms); a statement runs only when one of the
 * two grammars verifies it as exactly one read and the dialect's token checks pass under every reading.
 * On SQL Server it also reads where every statement ends (mssql.ts, one-statement.ts).
 */
import { readOnlyViolation } from './errors';
import { oneSqlparserStatement } from './one-statement';
import type { SqlparserDialect } from './sqlparser-parse';

export type { SqlparserDialect } from './sqlparser-parse';
export { loadSqlparser, sqlparserLoaded, sqlparserStatements } from './sqlparser-parse';

const WRITES = new Set([
  'Insert',
  'Update',
  'Delete',
  'Merge',
  'CreateTable',
  'CreateView',
  'Drop',
  'AlterTable',
  'Truncate',
  'Call',
  'Execute',
  'SetVariable',
  'Set',
  'LockTables',
  'Copy',
  'Grant',
  'Revoke',
]);

const lockingRead = () =>
  readOnlyViolation(
    'LOCKING_READ',
    'Locking reads (FOR UPDATE, FOR SHARE, LOCK IN SHARE MODE, lock hints) are not allowed in a read-only query.',
  );

export interface SqlparserRead {
  kind: 'select' | 'values' | 'explain' | 'show' | 'describe';
  calls: string[][];
}

/**
 * Verifies `text` as one read with sqlparser-rs (one statement, read to the end of the text, no
 * unquoted reserved alias on SQL Server: one-statement.ts). Throws the parser's error (an Error,
 * not an AppError) when it cannot parse, and READ_ONLY_VIOLATION when it parses to something else.
 */
export function checkWithSqlparser(dialect: SqlparserDialect, text: string): SqlparserRead {
  const stmt = oneSqlparserStatement(dialect, text);
  const key = typeof stmt === 'string' ? stmt : Object.keys(stmt)[0];
  const body = (typeof stmt === 'object' ? stmt[key] : {}) as Record<string, unknown>;
  const calls: string[][] = [];
  if (key === 'Query') {
    walk(body, calls, 0, key);
    const values = !!(body.body as Record<string, unknown> | undefined)?.Values;
    return { kind: values ? 'values' : 'select', calls };
  }
  if (key === 'Explain') {
    if (body.analyze)
      throw readOnlyViolation('EXPLAIN ANALYZE', 'EXPLAIN ANALYZE runs the statement; use EXPLAIN.');
    const inner = body.statement as Record<string, unknown>;
    const innerKey = Object.keys(inner ?? {})[0];
    if (innerKey !== 'Query')
      throw readOnlyViolation(
        `EXPLAIN ${String(innerKey).toUpperCase()}`,
        'Only EXPLAIN of a read can run here.',
      );
    walk(inner.Query, calls, 0, 'Query');
    return { kind: 'explain', calls };
  }
  if (dialect === 'mysql' && key === 'ExplainTable') return { kind: 'describe', calls };
  if (dialect === 'mysql' && key.startsWith('Show')) return { kind: 'show', calls };
  const kind = key.replace(/([a-z])([A-Z])/g, '$1_$2').toUpperCase();
  throw readOnlyViolation(
    kind,
    `Only read statements can run here; this is a ${kind.replace(/_/g, ' ')} statement.`,
  );
}

const partsOf = (name: unknown): string[] | undefined => {
  if (!Array.isArray(name) || name.length === 0) return undefined;
  const parts = name.map((p) => {
    const v =
      (p as { Identifier?: { value?: unknown } })?.Identifier?.value ?? (p as { value?: unknown })?.value;
    return typeof v === 'string' ? v.toLowerCase() : '';
  });
  return parts.some((p) => p === '') ? undefined : parts;
};

const MAX_DEPTH = 1000;

function walk(node: unknown, calls: string[][], depth: number, key: string): void {
  if (depth > MAX_DEPTH)
    throw readOnlyViolation('TOO_DEEP', 'The statement is nested too deeply to be verified.');
  if (Array.isArray(node)) {
    for (const n of node) walk(n, calls, depth + 1, key);
    return;
  }
  if (!node || typeof node !== 'object') return;
  const o = node as Record<string, unknown>;
  if (WRITES.has(key)) {
    const kind = key.toUpperCase();
    throw readOnlyViolation(
      kind,
      `The statement contains ${kind}, which writes or changes state; only reads can run here.`,
    );
  }
  if (o.into) throw readOnlyViolation('SELECT_INTO', 'SELECT … INTO is not allowed in a read-only query.');
  if (Array.isArray(o.locks) && o.locks.length > 0) throw lockingRead();
  // Function calls, and table-valued functions written in FROM (a table name with arguments).
  if (key === 'Function' || (key === 'Table' && o.args)) {
    const parts = partsOf(o.name);
    if (!parts) throw readOnlyViolation('FUNCTION', 'A function name could not be read.');
    calls.push(parts);
  }
  for (const [k, v] of Object.entries(o)) if (v && typeof v === 'object') walk(v, calls, depth + 1, k);
}
