/**
 * MySQL and MariaDB: one read, verified on node-sql-parser's grammar of the server (MySQL or MariaDB)
 * first and sqlparser-rs's MySQL grammar second, after the token checks under every reading of
 * strings and comments the server might apply (sql-text.ts). EXPLAIN and DESCRIBE check the
 * explained statement, or describe a table.
 */
import { AppError } from '../platform/errors';
import { multipleStatements as multiple } from './errors';
import { loadNodeParser, parseNodeTree, readOfTree } from './node-parser';
import { checkTokens, explain, noPragma, readText, tableShorthand, viaSqlparser } from './sql-text';
import { sqlparserLoaded } from './sqlparser';
import type { DialectCheck, VerifiedRead } from './verdict';

/** The check of MySQL (`MYSQL`) or MariaDB (`MARIADB`): the same rules on each server's grammar. */
export function mysqlCheck(type: 'MYSQL' | 'MARIADB'): DialectCheck {
  const check = (text: string, depth = 0): VerifiedRead => {
    const { readings, first } = readText('mysql', text);
    if (first === 'EXPLAIN' || first === 'DESCRIBE' || first === 'DESC')
      return explain('mysql', text, readings, depth, check);
    for (const r of readings) checkTokens('mysql', r.tokens);
    if (first === 'PRAGMA') throw noPragma();
    if (first === 'TABLE') throw tableShorthand();
    let asts: unknown[];
    try {
      asts = parseNodeTree(type, text, first);
    } catch (e) {
      // node-sql-parser cannot parse it: sqlparser-rs's reading decides, when it is loaded.
      if (!sqlparserLoaded()) throw e;
      try {
        return viaSqlparser('mysql', text);
      } catch (e2) {
        if (e2 instanceof AppError) throw e2;
        throw e;
      }
    }
    if (asts.length !== 1) throw multiple();
    return readOfTree(type, 'mysql', asts[0] as Record<string, unknown>, first);
  };
  return { load: () => loadNodeParser(type), check };
}
