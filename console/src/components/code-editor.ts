/**
 * The SQL editor proper: CodeMirror 6 with @codemirror/lang-sql (JSON for MongoDB). This module and
 * everything it imports form one chunk that `sql-editor.tsx` loads with a dynamic import, so the first
 * page never downloads it.
 *
 * The editor lives in an open shadow root of its host element. CodeMirror writes its styles at run time;
 * in a document it would add `<style>` elements, which the console's Content-Security-Policy (`style-src`
 * falls back to `'self'`, no inline styles) refuses. In a shadow root it uses a constructed stylesheet
 * (`adoptedStyleSheets`), which script builds through the CSSOM and the policy does not govern, so the
 * CSP stays as strict as before. Inherited properties (font, colour) still come from the page.
 */
import {
  autocompletion,
  type Completion,
  type CompletionContext,
  type CompletionResult,
  closeCompletion,
  completionKeymap,
  completionStatus,
  startCompletion,
} from '@codemirror/autocomplete';
import { defaultKeymap, history, historyKeymap } from '@codemirror/commands';
import { json, jsonLanguage } from '@codemirror/lang-json';
import {
  MariaSQL,
  MSSQL,
  MySQL,
  PostgreSQL,
  type SQLDialect,
  SQLite,
  type SQLNamespace,
  StandardSQL,
  sql,
} from '@codemirror/lang-sql';
import { bracketMatching, HighlightStyle, syntaxHighlighting, syntaxTree } from '@codemirror/language';
import { Compartment, EditorSelection, EditorState, type Extension, Prec } from '@codemirror/state';
import { EditorView, highlightSpecialChars, keymap } from '@codemirror/view';
import { tags } from '@lezer/highlight';
import type { Annotation, SchemaTable } from './schema-cache';

/** What the editor completes from: the connection's tables and columns, with their notes. */
export interface CompletionSchema {
  tables: SchemaTable[];
  notes: Annotation[];
}

export interface EditorOptions {
  doc: string;
  /** The accessible name of the text box ("SQL"). */
  label: string;
  onChange(doc: string): void;
  onRun(): void;
}

export interface EditorInstance {
  /** Replaces the text when it differs (the component's `value` changed from outside). */
  setDoc(doc: string): void;
  /** Dialect by connection type and the schema to complete from (either may be unknown). */
  setLanguage(type: string | undefined, schema: CompletionSchema | undefined): void;
  /** ARIA state of the text box: invalid, and the ids of the elements describing it (inside the page). */
  setAria(attrs: { invalid?: boolean; describedBy?: string }): void;
  /** Inserts text at the cursor (replacing the selection) and focuses the editor. */
  insert(text: string): void;
  focus(selection?: { anchor: number; head: number }): void;
  destroy(): void;
}

const DIALECTS: Record<string, SQLDialect> = {
  POSTGRES: PostgreSQL,
  MYSQL: MySQL,
  MARIADB: MariaSQL,
  MSSQL: MSSQL,
  SQLITE: SQLite,
};

/** Colours with at least 4.5:1 contrast on white (WCAG AA for normal text). */
const highlight = HighlightStyle.define([
  { tag: [tags.keyword, tags.operatorKeyword, tags.modifier], color: '#7c2d92', fontWeight: '600' },
  { tag: [tags.string, tags.special(tags.string)], color: '#9a3412' },
  { tag: [tags.number, tags.bool, tags.null], color: '#166534' },
  { tag: [tags.comment, tags.lineComment, tags.blockComment], color: '#4b5563', fontStyle: 'italic' },
  { tag: [tags.typeName, tags.standard(tags.name)], color: '#1e40af' },
  { tag: [tags.special(tags.name), tags.propertyName], color: '#0e7490' },
  { tag: tags.invalid, color: '#b91c1c' },
]);

const theme = EditorView.theme({
  '&': { backgroundColor: '#fff', color: '#111827', borderRadius: '4px' },
  '&.cm-focused': { outline: 'none' },
  '.cm-scroller': {
    fontFamily: 'ui-monospace, SFMono-Regular, Menlo, monospace',
    fontSize: '0.9em',
    lineHeight: '1.45',
    maxHeight: '60vh',
    overflow: 'auto',
  },
  '.cm-content': { minHeight: 'var(--sql-editor-min-height, 8em)', padding: '0.35rem 0' },
  '.cm-line': { padding: '0 0.4rem' },
  '.cm-matchingBracket': { backgroundColor: '#dbeafe', outline: '1px solid #93c5fd' },
  '.cm-tooltip': { border: '1px solid #6b7280', backgroundColor: '#fff', color: '#111827' },
  '.cm-tooltip.cm-tooltip-autocomplete > ul': {
    fontFamily: 'ui-monospace, SFMono-Regular, Menlo, monospace',
    maxHeight: '14em',
    maxWidth: 'min(32rem, 90vw)',
  },
  '.cm-tooltip.cm-tooltip-autocomplete > ul > li[aria-selected]': {
    backgroundColor: '#1d4ed8',
    color: '#fff',
  },
  '.cm-completionDetail': { color: 'inherit', fontStyle: 'normal', opacity: '1' },
  '.cm-completionInfo': { maxWidth: 'min(24rem, 80vw)', whiteSpace: 'pre-wrap', overflowWrap: 'anywhere' },
  '.cm-completionMatchedText': { textDecoration: 'underline', fontWeight: '700' },
});

/** One line of notes for a table or column: the database's comment, then the annotations. */
function noteText(comment: string | undefined, notes: Annotation[]): string | undefined {
  const parts = [comment, ...notes.map((n) => n.annotation)].filter(Boolean);
  return parts.length ? parts.join('\n') : undefined;
}

/** Columns as completion options: the type as detail, comment and annotations as info. */
function columnOptions(t: SchemaTable, notes: Annotation[]): Completion[] {
  return t.columns.map((c) => ({
    label: c.name,
    type: 'property',
    detail: c.type + (c.primaryKey ? ' · key' : ''),
    info: noteText(
      c.comment,
      notes.filter((n) => n.tableName === t.name && n.columnName === c.name),
    ),
  }));
}

function tableEntry(t: SchemaTable, notes: Annotation[]): SQLNamespace {
  return {
    self: {
      label: t.name,
      type: 'type',
      detail: t.kind,
      info: noteText(
        t.comment,
        notes.filter((n) => n.tableName === t.name && !n.columnName),
      ),
    },
    children: columnOptions(t, notes),
  };
}

/**
 * The lang-sql namespace of a schema: tables at the top level (and under their schema name, so
 * `public.acc` completes too), each with its columns. Tables of the most common schema, or of none,
 * complete unqualified.
 */
export function namespaceOf(schema: CompletionSchema): { namespace: SQLNamespace; defaultSchema?: string } {
  const namespace: Record<string, SQLNamespace> = {};
  const bySchema = new Map<string, Record<string, SQLNamespace>>();
  for (const t of schema.tables) {
    const entry = tableEntry(t, schema.notes);
    if (!t.schema) {
      namespace[t.name] = entry;
      continue;
    }
    const tables = bySchema.get(t.schema) ?? {};
    bySchema.set(t.schema, tables);
    tables[t.name] = entry;
  }
  let defaultSchema: string | undefined;
  let most = 0;
  for (const [name, tables] of bySchema) {
    const n = Object.keys(tables).length;
    if (n > most) [defaultSchema, most] = [name, n];
    // A table called like a schema keeps its own entry.
    if (!(name in namespace))
      namespace[name] = { self: { label: name, type: 'namespace' }, children: tables };
  }
  return { namespace, defaultSchema };
}

const MONGO_KEYS = ['collection', 'filter', 'projection', 'sort', 'limit', 'pipeline'];
const MONGO_OPERATORS = [
  '$match',
  '$group',
  '$project',
  '$sort',
  '$limit',
  '$skip',
  '$unwind',
  '$lookup',
  '$count',
  '$addFields',
  '$sum',
  '$avg',
  '$min',
  '$max',
  '$first',
  '$last',
  '$push',
  '$eq',
  '$ne',
  '$gt',
  '$gte',
  '$lt',
  '$lte',
  '$in',
  '$nin',
  '$and',
  '$or',
  '$not',
  '$exists',
  '$regex',
];

/**
 * Completion for a MongoDB query (JSON, decisions.md §3): inside a string, the query's keys, the
 * collections (after "collection":), the fields of the named collection (or of all), and `$` operators.
 */
function mongoCompletion(schema: CompletionSchema | undefined) {
  return (ctx: CompletionContext): CompletionResult | null => {
    const node = syntaxTree(ctx.state).resolveInner(ctx.pos, -1);
    const inString = node.name === 'String' || node.name === 'PropertyName';
    const word = ctx.matchBefore(/"?[$\w.]*/);
    if (!word || (!inString && !ctx.explicit && word.from === word.to)) return null;
    const from = word.text.startsWith('"') ? word.from + 1 : word.from;
    const doc = ctx.state.doc.toString();
    const named = /"collection"\s*:\s*"([^"]*)"/.exec(doc)?.[1];
    const tables = schema?.tables ?? [];
    const fieldsOf = tables.filter((t) => !named || t.name === named);
    const before = doc.slice(Math.max(0, from - 40), from);
    const options: Completion[] = /"collection"\s*:\s*"?$/.test(before)
      ? tables.map((t) => ({ label: t.name, type: 'type', detail: 'collection' }))
      : [
          ...MONGO_KEYS.map((k) => ({ label: k, type: 'keyword' })),
          ...MONGO_OPERATORS.map((k) => ({ label: k, type: 'keyword' })),
          ...tables.map((t) => ({ label: t.name, type: 'type', detail: 'collection' })),
          ...fieldsOf.flatMap((t) => columnOptions(t, schema?.notes ?? [])),
        ];
    return { from, options, validFor: /^[$\w.]*$/ };
  };
}

function languageFor(type: string | undefined, schema: CompletionSchema | undefined): Extension {
  if (type === 'MONGODB') return [json(), jsonLanguage.data.of({ autocomplete: mongoCompletion(schema) })];
  const ns = schema ? namespaceOf(schema) : undefined;
  return sql({
    dialect: (type && DIALECTS[type]) || StandardSQL,
    upperCaseKeywords: true,
    ...(ns ? { schema: ns.namespace, defaultSchema: ns.defaultSchema } : {}),
  });
}

/**
 * Typing over a selection (Ctrl+A then a letter, say) is applied by the editor, not by the browser.
 * Chromium's own editing, replacing a selection across lines, writes a `style` attribute to keep the
 * look of the merged lines; the CSP refuses it (and reports a violation) and CodeMirror redraws the lines
 * anyway. Everything else (typing at a cursor, composition, Backspace/Delete through the keymap) goes the
 * usual way.
 */
const replaceSelectionAsInput = EditorView.domEventHandlers({
  beforeinput(e, view) {
    if (e.inputType !== 'insertText' && e.inputType !== 'insertReplacementText') return false;
    if (view.composing) return false;
    const text = e.data ?? e.dataTransfer?.getData('text/plain');
    if (text == null) return false;
    // What the browser is about to replace: its target range, else the DOM selection (which the editor's
    // state may not have caught up with yet: a select-all just before), else the editor's selection.
    const target = e.getTargetRanges().find((r) => !r.collapsed);
    const dom = (view.root as Document).getSelection?.();
    const inside = (n: Node | null | undefined): n is Node => !!n && view.contentDOM.contains(n);
    let from: number;
    let to: number;
    if (target) {
      from = view.posAtDOM(target.startContainer, target.startOffset);
      to = view.posAtDOM(target.endContainer, target.endOffset);
    } else if (dom && !dom.isCollapsed && inside(dom.anchorNode) && inside(dom.focusNode)) {
      const a = view.posAtDOM(dom.anchorNode, dom.anchorOffset);
      const b = view.posAtDOM(dom.focusNode, dom.focusOffset);
      [from, to] = a <= b ? [a, b] : [b, a];
    } else {
      const main = view.state.selection.main;
      if (main.empty) return false;
      ({ from, to } = main);
    }
    e.preventDefault();
    view.dispatch({
      changes: { from, to, insert: text },
      selection: { anchor: from + text.length },
      userEvent: 'input.type',
      scrollIntoView: true,
    });
    return true;
  },
});

/** Mounts the editor in `host` (in its shadow root) and returns how to drive it. */
export function createEditor(host: HTMLElement, opts: EditorOptions): EditorInstance {
  const root = host.shadowRoot ?? host.attachShadow({ mode: 'open' });
  root.replaceChildren();
  const parent = document.createElement('div');
  root.appendChild(parent);
  const language = new Compartment();
  const aria = new Compartment();
  let onChange = opts.onChange;
  const view = new EditorView({
    parent,
    state: EditorState.create({
      doc: opts.doc,
      extensions: [
        highlightSpecialChars(),
        history(),
        bracketMatching(),
        EditorView.lineWrapping,
        syntaxHighlighting(highlight),
        autocompletion({ activateOnTyping: true, icons: false, maxRenderedOptions: 50 }),
        language.of(languageFor(undefined, undefined)),
        // Ctrl/⌘+Enter runs (before the default keymap's "insert blank line"); Ctrl+Space opens the
        // completion list. Tab is not taken: it moves the focus on, as in a textarea.
        Prec.highest(
          keymap.of([
            {
              key: 'Mod-Enter',
              run: () => {
                opts.onRun();
                return true;
              },
            },
            { key: 'Ctrl-Space', run: startCompletion },
          ]),
        ),
        keymap.of([...completionKeymap, ...historyKeymap, ...defaultKeymap]),
        replaceSelectionAsInput,
        EditorView.contentAttributes.of({ 'aria-label': opts.label, spellcheck: 'false' }),
        aria.of([]),
        theme,
        EditorView.updateListener.of((u) => {
          if (u.docChanged) onChange(u.state.doc.toString());
          // A list whose answer arrived after the focus left (typing, then Tab at once) closes: it
          // would hang over the page with nobody to choose from it.
          if (completionStatus(u.state) && !u.view.hasFocus)
            setTimeout(() => {
              if (!view.hasFocus) closeCompletion(view);
            });
        }),
      ],
    }),
  });
  return {
    setDoc(doc) {
      const now = view.state.doc.toString();
      if (doc === now) return;
      // Set from outside (a history entry put back, a form reset): not a change to report back.
      const keep = onChange;
      onChange = () => {};
      try {
        view.dispatch({
          changes: { from: 0, to: now.length, insert: doc },
          selection: EditorSelection.cursor(Math.min(doc.length, view.state.selection.main.head)),
        });
      } finally {
        onChange = keep;
      }
    },
    setLanguage(type, schema) {
      view.dispatch({ effects: language.reconfigure(languageFor(type, schema)) });
    },
    setAria({ invalid, describedBy }) {
      // The describing elements are in the page, outside the shadow root: an id reference cannot cross
      // it, so the description is copied in as text.
      const description = describedBy
        ?.split(/\s+/)
        .map((id) => document.getElementById(id)?.textContent?.trim())
        .filter(Boolean)
        .join(' ');
      view.dispatch({
        effects: aria.reconfigure(
          EditorView.contentAttributes.of({
            ...(invalid ? { 'aria-invalid': 'true' } : {}),
            ...(description ? { 'aria-description': description } : {}),
          }),
        ),
      });
    },
    insert(text) {
      view.dispatch(view.state.replaceSelection(text), { scrollIntoView: true });
      view.focus();
    },
    focus(selection) {
      if (selection) {
        const max = view.state.doc.length;
        view.dispatch({
          selection: EditorSelection.single(Math.min(selection.anchor, max), Math.min(selection.head, max)),
        });
      }
      view.focus();
    },
    destroy() {
      view.destroy();
      root.replaceChildren();
    },
  };
}
