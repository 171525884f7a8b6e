/**
 * Action templates: `{{query_N.row_count}}`, `{{query_N.rows}}`, `{{query_N.columns}}`,
 * `{{query_N.table}}` (email only), `{{workflow.name}}`, `{{run.id}}`, `{{run.scheduledFor}}`.
 * N is the step's 1-based position (1 to 5). Whitespace inside the braces is allowed
 * (`{{ run.id }}`). Anything else written as `{{name}}` is an unknown placeholder: refused when
 * the action is saved (400 naming the field), so a delivered template never contains one.
 */

export const MAX_STEPS = 5;

/** Matches every `{{...}}` that looks like a placeholder (letters, digits, `_`, `.`, `-`). */
const PLACEHOLDER = /\{\{\s*([A-Za-z0-9_.-]*)\s*\}\}/g;
const PLACEHOLDER_AT = new RegExp(PLACEHOLDER.source, 'y');

export type Placeholder =
  | { kind: 'query'; step: number; field: 'row_count' | 'rows' | 'columns' | 'table' }
  | { kind: 'workflow.name' }
  | { kind: 'run.id' }
  | { kind: 'run.scheduledFor' };

const QUERY = /^query_([1-9][0-9]*)\.(row_count|rows|columns|table)$/;

export function parsePlaceholder(name: string): Placeholder | undefined {
  const q = QUERY.exec(name);
  if (q) {
    const step = Number(q[1]);
    if (step > MAX_STEPS) return undefined;
    return { kind: 'query', step, field: q[2] as 'row_count' | 'rows' | 'columns' | 'table' };
  }
  if (name === 'workflow.name' || name === 'run.id' || name === 'run.scheduledFor') return { kind: name };
  return undefined;
}

export interface TemplateProblem {
  message: string;
}

/**
 * Save-time check of a template: every placeholder known, `table` only where allowed. Returns
 * human-readable problems (empty when the template is fine).
 */
export function templateProblems(template: string, opts: { allowTable: boolean }): string[] {
  const problems: string[] = [];
  for (const m of template.matchAll(PLACEHOLDER)) {
    const p = parsePlaceholder(m[1]);
    if (!p)
      problems.push(
        `unknown placeholder ${m[0]}; use query_N.row_count, query_N.rows, query_N.columns${
          opts.allowTable ? ', query_N.table' : ''
        } (N = 1 to ${MAX_STEPS}), workflow.name, run.id or run.scheduledFor`,
      );
    else if (p.kind === 'query' && p.field === 'table' && !opts.allowTable)
      problems.push(`${m[0]} is only available in an email body`);
  }
  return [...new Set(problems)];
}

/** The highest step number a template refers to (0 when none). */
export function highestStep(template: string): number {
  let max = 0;
  for (const m of template.matchAll(PLACEHOLDER)) {
    const p = parsePlaceholder(m[1]);
    if (p?.kind === 'query') max = Math.max(max, p.step);
  }
  return max;
}

export interface TemplateStep {
  name: string;
  columns: string[];
  rows: Record<string, unknown>[];
  rowCount: number;
}

export interface TemplateContext {
  workflow: { id: string; name: string };
  run: { id: string; scheduledFor: string | null };
  steps: TemplateStep[];
}

/** Thrown when a template refers to a step the workflow does not have (the action is not sent). */
export class TemplateStepMissing extends Error {
  constructor(
    readonly step: number,
    readonly steps: number,
  ) {
    super(
      `The template refers to query_${step}, but the workflow has ${steps} step${steps === 1 ? '' : 's'}.`,
    );
    this.name = 'TemplateStepMissing';
  }
}

/** JSON.stringify that never throws on values drivers may return (bigint, Buffer, Date). */
export function toJson(value: unknown): string {
  return JSON.stringify(value, (_k, v) => {
    if (typeof v === 'bigint') return v.toString();
    if (v && typeof v === 'object' && (v as { type?: unknown }).type === 'Buffer' && Array.isArray(v.data))
      return Buffer.from(v.data as number[]).toString('base64');
    return v;
  });
}

/** The native value of a placeholder: numbers, arrays and strings (the JSON view). */
export function placeholderValue(p: Placeholder, ctx: TemplateContext): unknown {
  switch (p.kind) {
    case 'workflow.name':
      return ctx.workflow.name;
    case 'run.id':
      return ctx.run.id;
    case 'run.scheduledFor':
      return ctx.run.scheduledFor;
    case 'query': {
      const s = ctx.steps[p.step - 1];
      if (!s) throw new TemplateStepMissing(p.step, ctx.steps.length);
      if (p.field === 'row_count') return s.rowCount;
      if (p.field === 'columns') return s.columns;
      // rows (and table where a text value is needed): the rows as JSON values.
      return JSON.parse(toJson(s.rows));
    }
  }
}

/** The text form of a value: strings as they are, null as empty, numbers as digits, arrays as JSON. */
export function textOf(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return toJson(value);
}

/**
 * Generic renderer: replaces each placeholder with `render(placeholder, rawText)`.
 * Unknown placeholders (refused at save time) are left as written.
 */
export function renderWith(template: string, render: (p: Placeholder, raw: string) => string): string {
  return template.replace(PLACEHOLDER, (raw, name: string) => {
    const p = parsePlaceholder(name);
    return p ? render(p, raw) : raw;
  });
}

/** Plain text rendering (RAW bodies, email subjects, text alternatives). */
export function renderText(template: string, ctx: TemplateContext): string {
  return renderWith(template, (p) => textOf(placeholderValue(p, ctx)));
}

/** application/x-www-form-urlencoded rendering: every value percent-encoded (space as `+`). */
export function renderForm(template: string, ctx: TemplateContext): string {
  return renderWith(template, (p) => formEncode(textOf(placeholderValue(p, ctx))));
}

export function formEncode(s: string): string {
  // encodeURIComponent leaves !'()*~ alone; the form encoding (WHATWG URLSearchParams) encodes them.
  return encodeURIComponent(s)
    .replace(/[!'()*~]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
    .replace(/%20/g, '+');
}

/**
 * JSON rendering. The template is scanned as JSON text: a placeholder inside a string literal is
 * replaced by its text form escaped as string content (quotes, backslashes, control characters,
 * lone surrogates); a placeholder outside any string is replaced by its JSON value (numbers,
 * arrays, strings quoted, a null scheduledFor as `null`). The result is valid JSON whenever the
 * template with its placeholders is.
 */
export function renderJson(template: string, ctx: TemplateContext): string {
  let out = '';
  let inString = false;
  let escaped = false;
  let i = 0;
  while (i < template.length) {
    if (template.startsWith('{{', i)) {
      PLACEHOLDER_AT.lastIndex = i;
      const m = PLACEHOLDER_AT.exec(template);
      if (m) {
        const p = parsePlaceholder(m[1]);
        if (p) {
          const value = placeholderValue(p, ctx);
          out += inString ? JSON.stringify(textOf(value)).slice(1, -1) : toJson(value ?? null);
          escaped = false;
          i += m[0].length;
          continue;
        }
      }
    }
    const c = template[i];
    if (inString) {
      if (escaped) escaped = false;
      else if (c === '\\') escaped = true;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    out += c;
    i += 1;
  }
  return out;
}

/** A context with sample values, used at save time to check that a JSON template yields JSON. */
export function sampleContext(): TemplateContext {
  const step: TemplateStep = { name: 'sample', columns: ['a'], rows: [{ a: 1 }], rowCount: 1 };
  return {
    workflow: { id: '00000000-0000-4000-8000-000000000000', name: 'sample "workflow"' },
    run: { id: '00000000-0000-4000-8000-000000000000', scheduledFor: null },
    steps: Array.from({ length: MAX_STEPS }, () => step),
  };
}
