/**
 * A small SQL tokenizer that follows each database's own rules for comments, strings and quoted
 * identifiers. The read-only guard uses it next to the real parser (node-sql-parser) because the
 * parser's lexing differs from the servers' in places that matter for safety, for example:
 * PostgreSQL treats `'\'` as a complete string (standard_conforming_strings) while the parser
 * reads a backslash escape; MySQL runs the body of `/*! ... *\/` comments that the parser skips;
 * MySQL's `--1` is not a comment. The guard checks the token stream under every interpretation
 * a server could apply (see `interpretations`), so text hidden inside a "string" or "comment"
 * under one reading is still seen under the other.
 */
export type Dialect = 'pg' | 'mysql' | 'mssql' | 'sqlite';

export type TokenKind = 'word' | 'quoted' | 'string' | 'number' | 'param' | 'punct';

export interface Token {
  kind: TokenKind;
  /** Words keep their case; quoted identifiers are unquoted. */
  value: string;
  start: number;
  end: number;
}

export interface LexOptions {
  dialect: Dialect;
  /** Whether a backslash escapes the next character inside '...' (MySQL default; PostgreSQL with standard_conforming_strings off). */
  backslashEscapes: boolean;
}

export interface LexResult {
  tokens: Token[];
  /** MySQL/MariaDB executable comments (`/*! ... *\/`, `/*M! ... *\/`) seen. */
  executableComment: boolean;
  /** A string, quoted identifier or block comment that never ends. */
  unterminated: boolean;
}

const isWordStart = (c: string) => /[A-Za-z_\u0080-\uffff]/.test(c);
const isWordChar = (c: string) => /[A-Za-z0-9_$\u0080-\uffff]/.test(c);
const isDigit = (c: string) => c >= '0' && c <= '9';
const isSpace = (c: string) => /\s/.test(c);

/** The readings of the text a server might apply; the guard requires all of them to pass. */
export function interpretations(dialect: Dialect): LexOptions[] {
  if (dialect === 'mysql' || dialect === 'pg')
    return [
      { dialect, backslashEscapes: dialect === 'mysql' },
      { dialect, backslashEscapes: dialect !== 'mysql' },
    ];
  return [{ dialect, backslashEscapes: false }];
}

export function lex(text: string, opts: LexOptions): LexResult {
  const { dialect } = opts;
  const tokens: Token[] = [];
  let executableComment = false;
  let unterminated = false;
  let i = 0;
  const n = text.length;

  /** Reads a quoted run starting at i (the opening quote); returns the index after the closing quote. */
  const quoted = (open: string, close: string, backslash: boolean): { end: number; body: string } => {
    let j = i + 1;
    let body = '';
    while (j < n) {
      const c = text[j];
      if (backslash && c === '\\' && j + 1 < n) {
        body += text[j + 1];
        j += 2;
        continue;
      }
      if (c === close) {
        if (text[j + 1] === close && open === close) {
          body += c;
          j += 2;
          continue;
        }
        if (close === ']' && text[j + 1] === ']') {
          body += c;
          j += 2;
          continue;
        }
        return { end: j + 1, body };
      }
      body += c;
      j++;
    }
    unterminated = true;
    return { end: n, body };
  };

  while (i < n) {
    const c = text[i];
    const next = text[i + 1];
    if (isSpace(c)) {
      i++;
      continue;
    }
    // Line comments. MySQL needs whitespace (or a control character, or the end) after "--".
    if (c === '-' && next === '-') {
      const after = text[i + 2];
      if (dialect !== 'mysql' || after === undefined || after <= ' ') {
        while (i < n && text[i] !== '\n') i++;
        continue;
      }
    }
    if (c === '#' && dialect === 'mysql') {
      while (i < n && text[i] !== '\n') i++;
      continue;
    }
    if (c === '/' && next === '*') {
      if (dialect === 'mysql' && (text[i + 2] === '!' || text.slice(i + 2, i + 4).toUpperCase() === 'M!'))
        executableComment = true;
      const nests = dialect === 'pg' || dialect === 'mssql';
      let depth = 1;
      let j = i + 2;
      while (j < n && depth > 0) {
        if (text[j] === '*' && text[j + 1] === '/') {
          depth--;
          j += 2;
        } else if (nests && text[j] === '/' && text[j + 1] === '*') {
          depth++;
          j += 2;
        } else j++;
      }
      // SQLite accepts an unterminated comment at the end; the others reject it.
      if (depth > 0 && dialect !== 'sqlite') unterminated = true;
      i = j;
      continue;
    }
    // PostgreSQL dollar quoting ($$...$$, $tag$...$tag$) and $n parameters.
    if (c === '$' && dialect === 'pg') {
      if (isDigit(next ?? '')) {
        let j = i + 1;
        while (j < n && isDigit(text[j])) j++;
        tokens.push({ kind: 'param', value: text.slice(i, j), start: i, end: j });
        i = j;
        continue;
      }
      const m = /^\$([A-Za-z_\u0080-\uffff][A-Za-z0-9_\u0080-\uffff]*)?\$/.exec(text.slice(i));
      if (m) {
        const tag = m[0];
        const close = text.indexOf(tag, i + tag.length);
        const end = close < 0 ? n : close + tag.length;
        if (close < 0) unterminated = true;
        tokens.push({
          kind: 'string',
          value: text.slice(i + tag.length, close < 0 ? n : close),
          start: i,
          end,
        });
        i = end;
        continue;
      }
    }
    if (c === "'") {
      const q = quoted("'", "'", opts.backslashEscapes);
      tokens.push({ kind: 'string', value: q.body, start: i, end: q.end });
      i = q.end;
      continue;
    }
    if (c === '"') {
      // A string in MySQL (unless ANSI_QUOTES), an identifier elsewhere.
      const q = quoted('"', '"', dialect === 'mysql' && opts.backslashEscapes);
      tokens.push({ kind: dialect === 'mysql' ? 'string' : 'quoted', value: q.body, start: i, end: q.end });
      i = q.end;
      continue;
    }
    if (c === '`' && (dialect === 'mysql' || dialect === 'sqlite')) {
      const q = quoted('`', '`', false);
      tokens.push({ kind: 'quoted', value: q.body, start: i, end: q.end });
      i = q.end;
      continue;
    }
    if (c === '[' && (dialect === 'mssql' || dialect === 'sqlite')) {
      const q = quoted('[', ']', false);
      tokens.push({ kind: 'quoted', value: q.body, start: i, end: q.end });
      i = q.end;
      continue;
    }
    if (isWordStart(c)) {
      let j = i + 1;
      while (j < n && isWordChar(text[j])) j++;
      const word = text.slice(i, j);
      // PostgreSQL E'...' strings always take backslash escapes.
      if (dialect === 'pg' && text[j] === "'" && /^[eE]$/.test(word)) {
        i = j;
        const q = quoted("'", "'", true);
        tokens.push({ kind: 'string', value: q.body, start: j - 1, end: q.end });
        i = q.end;
        continue;
      }
      tokens.push({ kind: 'word', value: word, start: i, end: j });
      i = j;
      continue;
    }
    if (isDigit(c) || (c === '.' && isDigit(next ?? ''))) {
      let j = i + 1;
      while (j < n && /[0-9A-Za-z_.]/.test(text[j])) {
        if ((text[j] === 'e' || text[j] === 'E') && (text[j + 1] === '+' || text[j + 1] === '-')) j++;
        j++;
      }
      tokens.push({ kind: 'number', value: text.slice(i, j), start: i, end: j });
      i = j;
      continue;
    }
    if (c === '?' && (dialect === 'mysql' || dialect === 'sqlite')) {
      let j = i + 1;
      while (dialect === 'sqlite' && j < n && isDigit(text[j])) j++;
      tokens.push({ kind: 'param', value: text.slice(i, j), start: i, end: j });
      i = j;
      continue;
    }
    if ((c === '@' || (c === ':' && dialect === 'sqlite')) && isWordChar(next ?? '')) {
      let j = i + 1;
      if (text[j] === '@') j++;
      while (j < n && isWordChar(text[j])) j++;
      tokens.push({ kind: 'param', value: text.slice(i, j), start: i, end: j });
      i = j;
      continue;
    }
    // Multi-character operators that matter to the guard.
    const two = text.slice(i, i + 2);
    if (two === ':=' || two === '::') {
      tokens.push({ kind: 'punct', value: two, start: i, end: i + 2 });
      i += 2;
      continue;
    }
    tokens.push({ kind: 'punct', value: c, start: i, end: i + 1 });
    i++;
  }
  return { tokens, executableComment, unterminated };
}

/** The first significant token, upper-cased (after leading comments and parentheses). */
export function leadingKeyword(tokens: Token[]): string | undefined {
  const t = tokens.find((x) => !(x.kind === 'punct' && x.value === '('));
  return t?.kind === 'word' ? t.value.toUpperCase() : undefined;
}
