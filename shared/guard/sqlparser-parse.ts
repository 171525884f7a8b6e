import { baselineWasmOnly } from './wasm-tiering';

/** datafusion-sqlparser-rs compiled to WebAssembly (@guanmingchiu/sqlparser-ts), loaded on first use. */
export type SqlparserDialect = 'mysql' | 'mssql' | 'sqlite';
type Parse = (sql: string, dialect: string) => unknown[];
let parseFn: Parse | undefined;

/** Loads the WebAssembly parser on first use (a lazy chunk). */
export async function loadSqlparser(): Promise<void> {
  if (parseFn) return;
  baselineWasmOnly();
  const mod = (await import('@guanmingchiu/sqlparser-ts')) as unknown as {
    init(): Promise<void>;
    parse: Parse;
  };
  await mod.init();
  parseFn = mod.parse;
}

export const sqlparserLoaded = () => parseFn !== undefined;

/** The statements sqlparser-rs reads in `text` for `dialect`; throws the parser's own error. */
export function sqlparserStatements(dialect: SqlparserDialect, text: string): Record<string, unknown>[] {
  if (!parseFn) throw new Error('sqlparser-rs is not loaded.');
  return parseFn(text, dialect) as Record<string, unknown>[];
}
