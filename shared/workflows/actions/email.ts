import { randomBytes } from 'node:crypto';
import { Marked, type Tokens } from 'marked';
import type { MailMessage } from '../../platform/mail';
import type { EmailActionConfig } from './config';
import { toCsv } from './csv';
import {
  type Placeholder,
  placeholderValue,
  renderText,
  renderWith,
  type TemplateContext,
  type TemplateStep,
  textOf,
  toJson,
} from './template';

/** Rows shown per HTML table in an email (the CSV attachment has them all). */
export const EMAIL_TABLE_ROWS = 100;
/** CSV bytes per message (SES refuses messages over 10 MB; base64 adds a third). */
export const MAX_ATTACHMENT_BYTES = 6 * 1024 * 1024;
/** Characters shown per table cell. */
const CELL_CHARS = 500;

export function escapeHtml(s: string): string {
  return s
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

function cellText(v: unknown): string {
  let t: string;
  if (v === null || v === undefined) t = '';
  else if (typeof v === 'string') t = v;
  else if (v instanceof Date) t = v.toISOString();
  else if (typeof v === 'object') t = toJson(v);
  else t = String(v);
  return t.length > CELL_CHARS ? `${t.slice(0, CELL_CHARS)}…` : t;
}

const TH = 'style="border:1px solid #ccc;padding:4px 8px;text-align:left;background:#f4f4f4"';
const TD = 'style="border:1px solid #ccc;padding:4px 8px;vertical-align:top"';

/** An HTML table of a step's rows; every column name and value HTML-escaped. */
export function htmlTable(step: TemplateStep): string {
  const shown = step.rows.slice(0, EMAIL_TABLE_ROWS);
  const head = step.columns.map((c) => `<th ${TH}>${escapeHtml(c)}</th>`).join('');
  const body = shown
    .map(
      (r) => `<tr>${step.columns.map((c) => `<td ${TD}>${escapeHtml(cellText(r[c]))}</td>`).join('')}</tr>`,
    )
    .join('');
  const note =
    step.rowCount > shown.length
      ? `<p style="color:#666">Showing ${shown.length} of ${step.rowCount} rows.</p>`
      : step.rowCount === 0
        ? '<p style="color:#666">No rows.</p>'
        : '';
  return `<table style="border-collapse:collapse;font-family:sans-serif;font-size:13px"><thead><tr>${head}</tr></thead><tbody>${body}</tbody></table>${note}`;
}

/** A plain-text rendering of a step's rows for the text alternative (tab-separated). */
export function textTable(step: TemplateStep): string {
  const shown = step.rows.slice(0, EMAIL_TABLE_ROWS);
  const clean = (s: string) => s.replace(/[\t\r\n]+/g, ' ');
  const lines = [step.columns.map(clean).join('\t')];
  for (const r of shown) lines.push(step.columns.map((c) => clean(cellText(r[c]))).join('\t'));
  if (step.rowCount > shown.length) lines.push(`(showing ${shown.length} of ${step.rowCount} rows)`);
  return lines.join('\n');
}

/**
 * Markdown → HTML with `marked`. Raw HTML written in the Markdown is shown as text (escaped), and
 * links keep only http, https and mailto targets: the body is the author's Markdown, not HTML.
 */
const markdown = new Marked({
  gfm: true,
  async: false,
  renderer: {
    html({ text }: Tokens.HTML | Tokens.Tag) {
      return escapeHtml(text);
    },
    link({ href, title, tokens }: Tokens.Link) {
      const inner = this.parser.parseInline(tokens);
      if (!/^(https?:|mailto:)/i.test(href)) return inner;
      const t = title ? ` title="${escapeHtml(title)}"` : '';
      return `<a href="${escapeHtml(href)}"${t}>${inner}</a>`;
    },
    image({ text }: Tokens.Image) {
      // Remote images in mail are tracking pixels at best; show the alt text.
      return escapeHtml(text);
    },
  },
});

/**
 * Renders the Markdown body. Placeholders are first replaced by opaque tokens (letters and digits
 * only, so Markdown cannot change them), the Markdown is converted, and then each token is
 * replaced by its HTML-escaped value, or by the HTML table for `{{query_N.table}}`. Values can
 * therefore never add Markdown or HTML of their own.
 */
export function renderBodyHtml(body: string, ctx: TemplateContext): string {
  const nonce = randomBytes(6).toString('hex');
  const values: string[] = [];
  const tables: boolean[] = [];
  const withTokens = renderWith(body, (p: Placeholder) => {
    const html =
      p.kind === 'query' && p.field === 'table'
        ? htmlTableFor(p.step, ctx)
        : escapeHtml(textOf(placeholderValue(p, ctx)));
    values.push(html);
    tables.push(p.kind === 'query' && p.field === 'table');
    return `LOUPE${nonce}X${values.length - 1}X`;
  });
  let html = markdown.parse(withTokens) as string;
  const token = new RegExp(`(<p>)?LOUPE${nonce}X(\\d+)X(</p>)?`, 'g');
  html = html.replace(token, (_all, open: string | undefined, n: string, close: string | undefined) => {
    const i = Number(n);
    // A table alone in its paragraph replaces the paragraph (a <table> may not sit inside <p>).
    if (tables[i] && open && close) return values[i];
    return (open ?? '') + values[i] + (close ?? '');
  });
  return html;
}

/** The step a table placeholder shows; throws TemplateStepMissing when the workflow lacks it. */
function stepFor(step: number, ctx: TemplateContext): TemplateStep {
  placeholderValue({ kind: 'query', step, field: 'row_count' }, ctx);
  return ctx.steps[step - 1];
}

function htmlTableFor(step: number, ctx: TemplateContext): string {
  return htmlTable(stepFor(step, ctx));
}

/** The text alternative: the Markdown source with values substituted, tables as tab-separated text. */
export function renderBodyText(body: string, ctx: TemplateContext): string {
  return renderWith(body, (p) =>
    p.kind === 'query' && p.field === 'table'
      ? `\n${textTable(stepFor(p.step, ctx))}\n`
      : textOf(placeholderValue(p, ctx)),
  );
}

/** Subject: plain text, line breaks (from values) folded to spaces, at most 998 characters. */
export function renderSubject(subject: string, ctx: TemplateContext): string {
  const s = renderText(subject, ctx)
    .replace(/[\r\n\0\t]+/g, ' ')
    .trim();
  return s.length > 998 ? `${s.slice(0, 997)}…` : s;
}

function csvName(step: TemplateStep, i: number): string {
  const slug = step.name
    .normalize('NFKD')
    .replace(/[^A-Za-z0-9._-]+/g, '-')
    .replace(/^[-.]+|[-.]+$/g, '')
    .slice(0, 60);
  return `query_${i + 1}${slug ? `-${slug}` : ''}.csv`;
}

/** The complete message of an email action (recipients, subject, HTML and text bodies, CSV files). */
export function buildEmail(config: EmailActionConfig, ctx: TemplateContext): MailMessage {
  let html = config.body ? renderBodyHtml(config.body, ctx) : '';
  let text = config.body ? renderBodyText(config.body, ctx) : '';
  if (config.includeTable) {
    ctx.steps.forEach((s, i) => {
      const title = s.name || `Query ${i + 1}`;
      html += `<h3 style="font-family:sans-serif">${escapeHtml(title)}</h3>${htmlTable(s)}`;
      text += `\n\n${title}\n${textTable(s)}`;
    });
  }
  const attachments = config.attachCsv
    ? ctx.steps.map((s, i) => ({
        filename: csvName(s, i),
        content: toCsv(s.columns, s.rows),
        contentType: 'text/csv; charset=utf-8',
      }))
    : [];
  const attachmentBytes = attachments.reduce((n, a) => n + Buffer.byteLength(a.content), 0);
  if (attachmentBytes > MAX_ATTACHMENT_BYTES)
    throw new Error(
      `Not sent: the CSV attachments are ${(attachmentBytes / 1048576).toFixed(1)} MiB, over the ${
        MAX_ATTACHMENT_BYTES / 1048576
      } MiB email limit; limit the steps' rows or turn attachCsv off.`,
    );
  return {
    to: config.to,
    cc: config.cc,
    subject: renderSubject(config.subject, ctx),
    html: `<!doctype html><html><body style="font-family:sans-serif">${html}</body></html>`,
    text: text.trim(),
    attachments,
  };
}
