/**
 * SQL text helpers of the console: how a schema name is written into the editor, and which `{{name}}`
 * placeholders a saved query's text has. The API decides in the end (its own lexer binds placeholders and
 * answers 400 naming the field); these only prepare what the user sees and sends.
 */

/** Words a bare table or column name cannot be in any of the dialects (quoted when met). */
const RESERVED = new Set(
  'all and any as asc between by case check column constraint create cross current_date current_time current_timestamp current_user default delete desc distinct drop else end except exists false fetch for foreign from full grant group having in index inner insert intersect into is join key left like limit natural not null offset on or order outer primary references right select session_user set some table then to top true union unique update user using values view when where with'.split(
    ' ',
  ),
);

/**
 * A name as the dialect writes it: bare when it is a plain identifier (lower case for PostgreSQL, whose
 * bare names fold to lower case), otherwise quoted ("…" PostgreSQL/SQLite, `…` MySQL/MariaDB, […] SQL
 * Server) with the quote doubled inside. MongoDB queries are JSON: the name as a JSON string.
 */
export function quoteIdent(name: string, type: string | undefined): string {
  if (type === 'MONGODB') return JSON.stringify(name);
  const plain = type === 'POSTGRES' || !type ? /^[a-z_][a-z0-9_$]*$/ : /^[A-Za-z_][A-Za-z0-9_$]*$/;
  if (plain.test(name) && !RESERVED.has(name.toLowerCase())) return name;
  if (type === 'MYSQL' || type === 'MARIADB') return `\`${name.replace(/`/g, '``')}\``;
  if (type === 'MSSQL') return `[${name.replace(/]/g, ']]')}]`;
  return `"${name.replace(/"/g, '""')}"`;
}

const PLACEHOLDER = /\{\{\s*([A-Za-z_][A-Za-z0-9_]{0,62})\s*\}\}/y;

/**
 * The distinct `{{name}}` placeholders of a query, in order of first use, outside string literals,
 * quoted identifiers and comments (`'…'`, `"…"`, `` `…` ``, `[…]` for SQL Server, `$tag$…$tag$` for
 * PostgreSQL, `--`, `#` for MySQL, and block comments). For MongoDB (JSON), placeholders stand inside
 * strings, so every one counts.
 */
export function placeholders(text: string, type: string | undefined): string[] {
  const names: string[] = [];
  const add = (n: string) => {
    if (!names.includes(n)) names.push(n);
  };
  if (type === 'MONGODB') {
    for (const m of text.matchAll(/\{\{\s*([A-Za-z_][A-Za-z0-9_]{0,62})\s*\}\}/g)) add(m[1]);
    return names;
  }
  const mysql = type === 'MYSQL' || type === 'MARIADB';
  const skipTo = (from: number, end: string) => {
    const at = text.indexOf(end, from);
    return at < 0 ? text.length : at + end.length;
  };
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    const next = text[i + 1];
    if (c === '{' && next === '{') {
      PLACEHOLDER.lastIndex = i;
      const m = PLACEHOLDER.exec(text);
      if (m) {
        add(m[1]);
        i = PLACEHOLDER.lastIndex;
        continue;
      }
    }
    if (c === "'" || c === '"' || (c === '`' && (mysql || type === 'SQLITE'))) {
      // A quote doubled inside is part of the text; MySQL also escapes with a backslash.
      let j = i + 1;
      while (j < text.length) {
        if (mysql && text[j] === '\\') j += 2;
        else if (text[j] === c && text[j + 1] === c) j += 2;
        else if (text[j] === c) break;
        else j++;
      }
      i = j + 1;
    } else if (c === '[' && type === 'MSSQL') i = skipTo(i + 1, ']');
    else if ((c === '-' && next === '-') || (c === '#' && mysql)) i = skipTo(i, '\n');
    else if (c === '/' && next === '*') i = skipTo(i + 2, '*/');
    else if (c === '$' && type === 'POSTGRES') {
      const tag = /^\$([A-Za-z_][A-Za-z0-9_]*)?\$/.exec(text.slice(i));
      i = tag ? skipTo(i + tag[0].length, tag[0]) : i + 1;
    } else i++;
  }
  return names;
}
