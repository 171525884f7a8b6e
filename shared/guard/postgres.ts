/**
 * PostgreSQL: one read, verified on the server's own grammar (libpg-query, postgres-grammar.ts), after
 * the token checks of the other reading of strings (sql-text.ts). Every function, operator, field
 * name and cast the statement shows is returned for the function rule, which needs the connection's
 * catalog (postgres-catalog.ts, applied by databases/run.ts).
 */
import type { Token } from './lexer';
import { checkPostgres, loadPgParser, type PgFunctionCall } from './postgres-grammar';
import { assertNotDenied, checkTokens, noPragma, readText } from './sql-text';
import type { DialectCheck, VerifiedRead } from './verdict';

const sameTokens = (a: Token[], b: Token[]) =>
  a.length === b.length && a.every((t, i) => t.kind === b[i].kind && t.value === b[i].value);

/**
 * PostgreSQL: the server's grammar decides (postgres-grammar.ts). The parser reads strings as the server
 * does with standard_conforming_strings on (the default); where the text reads differently with it
 * off (a backslash in a '…' string), the other reading must also pass the token checks, and every
 * call it shows joins the function rule.
 */
function check(text: string): VerifiedRead {
  const { readings, first } = readText('pg', text);
  if (first === 'PRAGMA') throw noPragma();
  const extra: PgFunctionCall[] = [];
  for (const r of readings.slice(1)) {
    if (sameTokens(r.tokens, readings[0].tokens)) continue;
    checkTokens('pg', r.tokens);
    r.tokens.forEach((t, i) => {
      const next = r.tokens[i + 1];
      if ((t.kind === 'word' || t.kind === 'quoted') && next?.kind === 'punct' && next.value === '(')
        extra.push({ name: t.kind === 'word' ? t.value.toLowerCase() : t.value });
    });
  }
  const read = checkPostgres(text);
  for (const f of extra) assertNotDenied('pg', f.name);
  return {
    kind: read.kind,
    pg: {
      functions: [...read.functions, ...extra],
      operators: read.operators,
      attributes: read.attributes,
      types: read.types,
      relations: read.relations,
    },
  };
}

export const postgres: DialectCheck = { load: loadPgParser, check };
