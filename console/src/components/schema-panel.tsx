import { useState } from 'preact/hooks';
import { ApiError } from '../api/client';
import { ErrorAlert, Loading } from './load';
import { count } from './result';
import { type Annotation, type SchemaTable, useSchema } from './schema-cache';
import { quoteIdent } from './sql-text';

/** At most this many tables are drawn at once; the search narrows a larger schema. */
const SHOWN = 200;

/**
 * The Schema panel of the Query page (a region named "Schema"): the connection's tables and columns from
 * the schema cache, with their types, keys, the database's comments and the annotations; a search over
 * table names, column names and notes; a click on a name inserts it (quoted as the dialect needs) at the
 * editor's cursor.
 */
export function SchemaPanel({
  connectionId,
  onInsert,
}: {
  connectionId: string;
  onInsert: (text: string) => void;
}) {
  const schema = useSchema(connectionId);
  const [search, setSearch] = useState('');
  const [open, setOpen] = useState<Record<string, boolean>>({});
  const info = schema.data;
  const q = search.trim().toLowerCase();
  const notes = info?.notes ?? [];
  const noteOf = (t: SchemaTable, column?: string) =>
    notes.filter(
      (n) => n.tableName === t.name && (column === undefined ? !n.columnName : n.columnName === column),
    );
  const hit = (s: string | null | undefined) => !!s && s.toLowerCase().includes(q);
  const tables = (info?.tables ?? [])
    .map((t) => {
      if (!q || hit(t.name) || hit(t.comment) || noteOf(t).some((n) => hit(n.annotation)))
        return { table: t, columns: t.columns, matched: false };
      const columns = t.columns.filter(
        (c) =>
          hit(c.name) || hit(c.type) || hit(c.comment) || noteOf(t, c.name).some((n) => hit(n.annotation)),
      );
      return columns.length ? { table: t, columns, matched: true } : null;
    })
    .filter((x) => x !== null);
  // A name in the schema most tables are in goes in bare; one in another schema with its schema.
  const counts = new Map<string, number>();
  for (const t of info?.tables ?? []) if (t.schema) counts.set(t.schema, (counts.get(t.schema) ?? 0) + 1);
  const main = [...counts].sort((a, b) => b[1] - a[1])[0]?.[0];
  const tableText = (t: SchemaTable) =>
    (t.schema && t.schema !== main ? `${quoteIdent(t.schema, info?.type)}.` : '') +
    quoteIdent(t.name, info?.type);
  const key = (t: SchemaTable) => `${t.schema ?? ''}.${t.name}`;
  return (
    <section class="schema-panel" aria-labelledby="schema-panel-title">
      <h2 id="schema-panel-title">Schema</h2>
      {schema.error instanceof ApiError && schema.error.status === 404 ? (
        <p class="muted">
          The schema of this connection has not been read yet: “Test connection” or “Refresh schema” on
          Connections reads it.
        </p>
      ) : (
        <ErrorAlert error={schema.error} />
      )}
      {schema.loading && <Loading what="schema" />}
      {info && (
        <>
          <div class="field">
            <label for="schema-panel-search">Search tables and columns</label>
            <input
              id="schema-panel-search"
              type="search"
              value={search}
              onInput={(e) => setSearch(e.currentTarget.value)}
              aria-describedby="schema-panel-count"
            />
          </div>
          <p id="schema-panel-count" class="muted" aria-live="polite">
            {q
              ? `${tables.length} of ${count(info.tables.length, 'table')} match.`
              : `${count(info.tables.length, 'table')}. Click a name to insert it at the cursor.`}
          </p>
          <ul class="schema-tables">
            {tables.slice(0, SHOWN).map(({ table: t, columns, matched }) => {
              const expanded = matched || !!open[key(t)];
              const listId = `schema-cols-${key(t).replace(/[^A-Za-z0-9_-]/g, '_')}`;
              return (
                <li key={key(t)}>
                  <div class="schema-table">
                    <button
                      type="button"
                      class="toggle"
                      aria-expanded={expanded}
                      aria-controls={listId}
                      aria-label={`Columns of ${t.schema && t.schema !== main ? `${t.schema}.` : ''}${t.name}`}
                      onClick={() => setOpen({ ...open, [key(t)]: !expanded })}
                    >
                      {expanded ? '▾' : '▸'}
                    </button>
                    <button type="button" class="link name" onClick={() => onInsert(tableText(t))}>
                      {t.schema && t.schema !== main ? `${t.schema}.` : ''}
                      {t.name}
                    </button>
                    <span class="muted">{t.kind === 'table' ? '' : t.kind}</span>
                  </div>
                  <Notes comment={t.comment} notes={noteOf(t)} />
                  {expanded && (
                    <ul id={listId} class="schema-columns">
                      {columns.map((c) => (
                        <li key={c.name}>
                          <button
                            type="button"
                            class="link name"
                            onClick={() => onInsert(quoteIdent(c.name, info.type))}
                          >
                            {c.name}
                          </button>{' '}
                          <span class="muted">
                            {c.type}
                            {c.primaryKey ? ' · key' : ''}
                            {c.nullable ? '' : ' · not null'}
                          </span>
                          <Notes comment={c.comment} notes={noteOf(t, c.name)} />
                        </li>
                      ))}
                    </ul>
                  )}
                </li>
              );
            })}
          </ul>
          {tables.length > SHOWN && (
            <p class="muted">{tables.length - SHOWN} more tables: search to narrow the list.</p>
          )}
        </>
      )}
    </section>
  );
}

function Notes({ comment, notes }: { comment?: string; notes: Annotation[] }) {
  const text = [comment, ...notes.map((n) => n.annotation)].filter(Boolean);
  if (!text.length) return null;
  return (
    <p class="schema-note">
      {text.map((t, i) => (
        <span key={i}>
          {i > 0 && ' · '}
          {t}
        </span>
      ))}
    </p>
  );
}
