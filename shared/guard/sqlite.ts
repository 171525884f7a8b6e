/**
 * SQLite: one read, verified on sqlparser-rs's SQLite grammar first (node-sql-parser rejects window
 * functions and more: 23% of the corpus' valid reads; sqlparser-rs is also faster) and node-sql-parser
 * second, after the token checks (sql-text.ts). EXPLAIN [QUERY PLAN] checks the explained statement;
 * a fixed set of PRAGMAs that only report may run in their query form.
 */
import { AppError } from '../platform/errors';
import { multipleStatements as multiple, readOnlyViolation } from './errors';
import type { Token } from './lexer';
import { loadNodeParser, parseNodeTree, readOfTree } from './node-parser';
import { checkTokens, explain, readText, tableShorthand, viaSqlparser } from './sql-text';
import { loadSqlparser, sqlparserLoaded } from './sqlparser';
import type { DialectCheck, ReadStatement, VerifiedRead } from './verdict';

/**
 * The database list (PRAGMA database_list, the pragma_database_list table) shows the absolute path of
 * every database file on the server: refused in every form (as a table, a call, quoted, any case).
 */
const pathLeak = () =>
  readOnlyViolation(
    'PRAGMA',
    "database_list is not available here: it shows the server's file paths. The database's schema is main; list its tables with SELECT name FROM sqlite_schema or PRAGMA table_list.",
  );

function check(text: string, depth = 0): VerifiedRead {
  const { readings, tokens, first } = readText('sqlite', text);
  for (const r of readings)
    if (
      r.tokens.some(
        (t) => (t.kind === 'word' || t.kind === 'quoted') && /^pragma_database_list$/i.test(t.value),
      )
    )
      throw pathLeak();
  if (first === 'EXPLAIN') return explain('sqlite', text, readings, depth, check);
  for (const r of readings) checkTokens('sqlite', r.tokens);
  if (first === 'PRAGMA') return pragma(tokens);
  if (first === 'TABLE') throw tableShorthand();
  if (sqlparserLoaded())
    try {
      return viaSqlparser('sqlite', text);
    } catch (e) {
      // Refusals stand; a statement sqlparser-rs cannot parse goes to node-sql-parser.
      if (e instanceof AppError) throw e;
    }
  const asts = parseNodeTree('SQLITE', text, first);
  if (asts.length !== 1) throw multiple();
  return readOfTree('SQLITE', 'sqlite', asts[0] as Record<string, unknown>, first);
}

/** SQLite pragmas that only report (in their query form, without `=`). */
const readPragmas = new Set([
  'table_info',
  'table_xinfo',
  'table_list',
  'index_list',
  'index_info',
  'index_xinfo',
  'foreign_key_list',
  'collation_list',
  'function_list',
  'module_list',
  'pragma_list',
  'compile_options',
  'page_count',
  'page_size',
  'freelist_count',
  'encoding',
  'user_version',
  'schema_version',
  'application_id',
  'data_version',
]);

function pragma(tokens: Token[]): ReadStatement {
  const rest = tokens.slice(1).filter((t) => !(t.kind === 'punct' && t.value === ';'));
  let i = 0;
  if (rest[1]?.value === '.') i = 2;
  const name = rest[i]?.value.toLowerCase();
  const after = rest.slice(i + 1);
  const argsOk =
    after.length === 0 ||
    (after.length === 3 &&
      after[0].value === '(' &&
      ['word', 'quoted', 'string', 'number'].includes(after[1].kind) &&
      after[2].value === ')');
  if (name === 'database_list') throw pathLeak();
  if (!name || !readPragmas.has(name) || !argsOk)
    throw readOnlyViolation(
      'PRAGMA',
      `Only read-only PRAGMAs in their query form can run here (${[...readPragmas].slice(0, 6).join(', ')}, …).`,
    );
  return { kind: 'pragma' };
}

export const sqlite: DialectCheck = {
  load: async () => {
    await loadSqlparser();
    await loadNodeParser('SQLITE');
  },
  check,
};
