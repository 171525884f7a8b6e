import type { RefObject } from 'preact';
import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import type { EditorInstance } from './code-editor';
import { type SchemaInfo, schemaOf, typeOf } from './schema-cache';

let chunk: Promise<typeof import('./code-editor')> | undefined;
/** CodeMirror and lang-sql, in their own chunk, fetched once when the first editor appears. */
export const loadSqlEditor = () => {
  if (!chunk) {
    chunk = import('./code-editor');
    // A failed load (offline, a deployment replaced the chunk) is tried again by the next editor.
    chunk.catch(() => {
      chunk = undefined;
    });
  }
  return chunk;
};

/** What a page may do with an editor from outside (the Schema panel inserts names). */
export interface SqlEditorHandle {
  /** Inserts text at the cursor, replacing the selection, and focuses the editor. */
  insert(text: string): void;
  focus(): void;
}

export interface SqlEditorProps {
  /** The text, as a textarea's value. */
  value: string;
  onChange: (value: string) => void;
  /** Ctrl/⌘+Enter. */
  onRun?: () => void;
  /** The connection whose cached schema is completed (tables, columns) and whose type sets the dialect. */
  connectionId?: string;
  /**
   * The connection's type (POSTGRES, MYSQL, MARIADB, MSSQL, SQLITE, MONGODB) when the page knows it;
   * otherwise it is read with the schema. MONGODB takes a JSON query.
   */
  dialect?: string;
  /** The id of the fallback textarea (the visible label points to it while the editor loads). */
  id?: string;
  /** Accessible name and visible label; "SQL" unless said. */
  label?: string;
  /** Minimum height in lines (8). */
  rows?: number;
  /** The API rejected this field: `aria-invalid`, and `describedBy` names the message. */
  invalid?: boolean;
  describedBy?: string;
  /** Set to the handle once mounted (for "click to insert"). */
  editorRef?: RefObject<SqlEditorHandle | null>;
}

/**
 * The SQL editor: CodeMirror 6 with the connection's SQL dialect, highlighting and completion of its
 * tables and columns from the schema cache (a `listbox` of `option`s, opened by typing or Ctrl+Space),
 * Ctrl/⌘+Enter runs. Used like a textarea (`value`/`onChange`); until the editor's chunk has loaded
 * (or if it fails to) it is a plain textarea with the same label, and typing carries over.
 */
export function SqlEditor({
  value,
  onChange,
  onRun,
  connectionId,
  dialect,
  id = 'sql',
  label = 'SQL',
  rows = 8,
  invalid,
  describedBy,
  editorRef,
}: SqlEditorProps) {
  const host = useRef<HTMLDivElement>(null);
  const area = useRef<HTMLTextAreaElement>(null);
  const editor = useRef<EditorInstance | null>(null);
  const [ready, setReady] = useState(false);
  // The editor calls the latest props, not the ones of its first render.
  const latest = useRef({ value, onChange, onRun, reported: value });
  Object.assign(latest.current, { value, onChange, onRun });

  useEffect(() => {
    let live = true;
    loadSqlEditor().then(
      (m) => {
        if (!live || !host.current) return;
        const typing = document.activeElement === area.current && area.current !== null;
        const selection = area.current
          ? { anchor: area.current.selectionStart, head: area.current.selectionEnd }
          : undefined;
        latest.current.reported = latest.current.value;
        editor.current = m.createEditor(host.current, {
          doc: latest.current.value,
          label,
          onChange: (v) => {
            latest.current.value = v;
            latest.current.reported = v;
            latest.current.onChange(v);
          },
          onRun: () => latest.current.onRun?.(),
        });
        setReady(true);
        // Someone typing in the textarea goes on typing in the editor, at the same place.
        if (typing) editor.current.focus(selection);
      },
      () => {
        // The chunk did not load (offline, a new deployment): the textarea stays and works.
      },
    );
    return () => {
      live = false;
      editor.current?.destroy();
      editor.current = null;
    };
  }, []);

  // A value set from outside (a history entry put back, a reset) replaces the text. A layout effect runs
  // in the same task as the render, before the next keystroke, so the value is never an older one.
  useLayoutEffect(() => {
    if (value === latest.current.reported) return;
    latest.current.reported = value;
    editor.current?.setDoc(value);
  }, [value, ready]);

  const [schema, setSchema] = useState<SchemaInfo | undefined>(undefined);
  useEffect(() => {
    setSchema(undefined);
    if (!connectionId) return;
    let live = true;
    // No schema (not read yet, or no `connections` scope) only means no table completion.
    schemaOf(connectionId).then(
      (s) => live && setSchema(s),
      () => {},
    );
    return () => {
      live = false;
    };
  }, [connectionId]);
  // The dialect: as the page says, else the connection's type (read on its own: a connection whose
  // schema was never read still has its dialect).
  const [ownType, setOwnType] = useState<string | undefined>(undefined);
  useEffect(() => {
    setOwnType(undefined);
    if (dialect || !connectionId) return;
    let live = true;
    typeOf(connectionId).then(
      (t) => live && setOwnType(t),
      () => {},
    );
    return () => {
      live = false;
    };
  }, [connectionId, dialect]);
  const type = dialect ?? ownType;
  useEffect(() => {
    editor.current?.setLanguage(type, schema);
  }, [type, schema, ready]);

  useEffect(() => {
    editor.current?.setAria({ invalid, describedBy });
  }, [invalid, describedBy, ready]);

  if (editorRef)
    editorRef.current = {
      insert(text) {
        if (editor.current) return editor.current.insert(text);
        const a = area.current;
        if (!a) return;
        a.setRangeText(text, a.selectionStart, a.selectionEnd, 'end');
        a.focus();
        onChange(a.value);
      },
      focus() {
        if (editor.current) editor.current.focus();
        else area.current?.focus();
      },
    };

  return (
    <div class="field sql-field">
      {/* The editor's text box is named by aria-label (a label cannot point into its shadow root); a
          click on the label still focuses it, and the keyboard reaches the text box itself by Tab. */}
      {/* biome-ignore lint/a11y/useKeyWithClickEvents: a label takes no focus; its control does */}
      <label for={ready ? undefined : id} onClick={() => editor.current?.focus()}>
        {label}
      </label>
      {!ready && (
        <textarea
          id={id}
          ref={area}
          rows={rows}
          spellcheck={false}
          class="code"
          value={value}
          aria-invalid={invalid || undefined}
          aria-describedby={describedBy}
          onInput={(e) => {
            latest.current.value = e.currentTarget.value;
            latest.current.reported = e.currentTarget.value;
            onChange(e.currentTarget.value);
          }}
          onKeyDown={(e) => {
            if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
              e.preventDefault();
              onRun?.();
            }
          }}
        />
      )}
      <div
        ref={host}
        class={`sql-editor${invalid ? ' invalid' : ''}`}
        data-ready={ready || undefined}
        style={{ '--sql-editor-min-height': `${rows * 1.45}em` }}
      />
    </div>
  );
}
