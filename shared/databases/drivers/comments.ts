import type { SchemaSnapshot } from './types';

/**
 * Table and column comments written in the database (PostgreSQL COMMENT ON, MySQL/MariaDB COMMENT,
 * SQL Server MS_Description). They are untrusted text: whoever can comment on a table writes them.
 * Each is cleaned (control, zero-width and direction-override characters become spaces, whitespace is
 * collapsed) and clipped to COMMENT_CHARS; a schema keeps COMMENTS_TOTAL_CHARS of comments at most
 * (tables' comments first, then columns', in schema order); the rest are dropped.
 */
export const COMMENT_CHARS = 300;
export const COMMENTS_TOTAL_CHARS = 100_000;
/** Characters read from the database per comment (the SQL clips before anything crosses the wire). */
export const COMMENT_READ_CHARS = 1_000;

const UNSAFE =
  /[\u0000-\u001f\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb]/g;

/** A comment made safe to store and show: cleaned, clipped; undefined when empty or not text. */
export function cleanComment(raw: unknown): string | undefined {
  if (raw === null || raw === undefined) return undefined;
  const text = (typeof raw === 'string' ? raw : Buffer.isBuffer(raw) ? raw.toString('utf8') : String(raw))
    .replace(UNSAFE, ' ')
    .replace(/\s+/g, ' ')
    .trim();
  if (!text) return undefined;
  if (text.length <= COMMENT_CHARS) return text;
  let cut = text.slice(0, COMMENT_CHARS - 1);
  // Never leave half of a surrogate pair.
  if (/[\ud800-\udbff]$/.test(cut)) cut = cut.slice(0, -1);
  return `${cut}…`;
}

/** Applies cleanComment to every comment and the schema-wide cap (in place); returns the snapshot. */
export function boundComments(snapshot: SchemaSnapshot): SchemaSnapshot {
  let left = COMMENTS_TOTAL_CHARS;
  const keep = (raw: unknown): string | undefined => {
    const c = cleanComment(raw);
    if (c === undefined || c.length > left) return undefined;
    left -= c.length;
    return c;
  };
  for (const t of snapshot.tables) {
    const c = keep(t.comment);
    if (c === undefined) delete t.comment;
    else t.comment = c;
  }
  for (const t of snapshot.tables)
    for (const col of t.columns) {
      const c = keep(col.comment);
      if (c === undefined) delete col.comment;
      else col.comment = c;
    }
  return snapshot;
}
