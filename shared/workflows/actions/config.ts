import * as z from 'zod';
import { templateProblems } from './template';

/**
 * Action configurations as stored (defaults applied). Both are validated strictly: unknown fields
 * are refused so that a typo never silently changes what is sent.
 */

export const HTTP_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
export const BODY_MODES = ['NONE', 'JSON', 'RAW', 'FORM_URLENCODED'] as const;

export const LIMITS = {
  headers: 20,
  headerName: 100,
  headerValue: 4096,
  url: 2048,
  bodyTemplate: 100_000,
  contentType: 255,
  timeoutMs: { min: 1000, max: 30_000, default: 10_000 },
  maxAttempts: { min: 1, max: 5, default: 3 },
  baseDelayMs: { min: 100, max: 30_000, default: 500 },
  successStatusCodes: 20,
  recipients: 50,
  address: 254,
  subject: 500,
  emailBody: 100_000,
  rawConfig: 256 * 1024,
} as const;

/** RFC 9110 token: the characters a header name may contain. */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** Header names refused inline because they carry secrets (case-insensitive): use a credential. */
const SECRET_HEADER_NAMES = new Set([
  'authorization',
  'proxy-authorization',
  'cookie',
  'x-api-key',
  'x-auth-token',
]);
const SECRET_HEADER_PARTS = ['secret', 'token', 'password', 'api-key', 'apikey', 'api_key'];

export function isSecretHeaderName(name: string): boolean {
  const n = name.toLowerCase();
  return SECRET_HEADER_NAMES.has(n) || SECRET_HEADER_PARTS.some((p) => n.includes(p));
}

/** Headers Loupe or the HTTP layer sets itself; a config may not override them. */
const MANAGED_HEADERS = new Set([
  'host',
  'content-length',
  'content-type',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'upgrade',
  'te',
  'trailer',
  'expect',
  'proxy-connection',
  'http2-settings',
]);

/** Query parameters that look like secrets are refused in the URL: a credential carries secrets. */
const SECRET_QUERY =
  /(secret|token|password|passwd|api[-_]?key|apikey|signature|^sig$|^key$|^auth$|^access[-_]?key)/i;

const noLineBreaks = (s: string) => !/[\r\n\0]/.test(s);

const headerSchema = z.strictObject({
  name: z
    .string()
    .min(1, 'a header name is required')
    .max(LIMITS.headerName, `at most ${LIMITS.headerName} characters`)
    .regex(TOKEN, "a header name is an HTTP token (letters, digits and !#$%&'*+.^_`|~-)")
    .refine((n) => !isSecretHeaderName(n), {
      message: 'this header carries a secret: use a credential (credentialId) instead of an inline value',
    })
    .refine((n) => !MANAGED_HEADERS.has(n.toLowerCase()), {
      message: 'this header is set by Loupe (use contentType for Content-Type)',
    }),
  value: z
    .string()
    .transform((v) => v.trim())
    .refine((v) => v.length > 0, 'a header value is required')
    .refine((v) => v.length <= LIMITS.headerValue, `at most ${LIMITS.headerValue} characters`)
    .refine(
      (v) => !/[^\t\x20-\x7e\x80-\xff]/.test(v),
      'a header value is printable Latin-1 text: no CR, LF, NUL, other control characters or characters above U+00FF',
    ),
});

export const WebhookConfigSchema = z
  .strictObject({
    version: z.literal(2, 'version must be 2'),
    url: z.string().min(1).max(LIMITS.url, `at most ${LIMITS.url} characters`),
    method: z.enum(HTTP_METHODS, 'method is one of GET, POST, PUT, PATCH, DELETE'),
    credentialId: z.uuid('credentialId is a UUID').nullable().default(null),
    headers: z
      .array(headerSchema)
      .max(LIMITS.headers, `at most ${LIMITS.headers} headers`)
      .default([])
      .superRefine((hs, ctx) => {
        const seen = new Set<string>();
        hs.forEach((h, i) => {
          const n = h.name.toLowerCase();
          if (seen.has(n))
            ctx.addIssue({ code: 'custom', path: [i, 'name'], message: `duplicate header ${h.name}` });
          seen.add(n);
        });
      }),
    bodyMode: z.enum(BODY_MODES, 'bodyMode is one of NONE, JSON, RAW, FORM_URLENCODED'),
    bodyTemplate: z
      .string()
      .max(LIMITS.bodyTemplate, `at most ${LIMITS.bodyTemplate} characters`)
      .nullable()
      .default(null),
    contentType: z
      .string()
      .max(LIMITS.contentType)
      .regex(
        /^[A-Za-z0-9!#$&^_.+-]+\/[A-Za-z0-9!#$&^_.+-]+(\s*;\s*[^\r\n\0]*)?$/,
        'a media type such as application/json',
      )
      .refine(noLineBreaks, 'no CR, LF or NUL')
      .nullable()
      .default(null),
    timeoutMs: z
      .int('timeoutMs is an integer')
      .min(LIMITS.timeoutMs.min, `timeoutMs is ${LIMITS.timeoutMs.min} to ${LIMITS.timeoutMs.max}`)
      .max(LIMITS.timeoutMs.max, `timeoutMs is ${LIMITS.timeoutMs.min} to ${LIMITS.timeoutMs.max}`)
      .default(LIMITS.timeoutMs.default),
    retry: z
      .strictObject({
        maxAttempts: z
          .int('maxAttempts is an integer')
          .min(LIMITS.maxAttempts.min, 'maxAttempts is 1 to 5')
          .max(LIMITS.maxAttempts.max, 'maxAttempts is 1 to 5')
          .default(LIMITS.maxAttempts.default),
        baseDelayMs: z
          .int('baseDelayMs is an integer')
          .min(LIMITS.baseDelayMs.min, 'baseDelayMs is 100 to 30000')
          .max(LIMITS.baseDelayMs.max, 'baseDelayMs is 100 to 30000')
          .default(LIMITS.baseDelayMs.default),
      })
      .default({ maxAttempts: LIMITS.maxAttempts.default, baseDelayMs: LIMITS.baseDelayMs.default }),
    successStatusCodes: z
      .array(
        z
          .int('a status code is an integer')
          .min(100, 'a status code is 100 to 599')
          .max(599, 'a status code is 100 to 599'),
      )
      .min(1, 'successStatusCodes has 1 to 20 codes (omit it to accept every 2xx)')
      .max(LIMITS.successStatusCodes, 'successStatusCodes has 1 to 20 codes')
      .refine((a) => new Set(a).size === a.length, 'successStatusCodes must be unique')
      .nullable()
      .default(null),
    critical: z.boolean('critical is a boolean').default(true),
  })
  .superRefine((c, ctx) => {
    if (c.method === 'GET' && c.bodyMode !== 'NONE')
      ctx.addIssue({
        code: 'custom',
        path: ['bodyMode'],
        message: 'a GET request has no body: use bodyMode NONE',
      });
    if (c.bodyMode === 'NONE' && c.bodyTemplate)
      ctx.addIssue({
        code: 'custom',
        path: ['bodyTemplate'],
        message: 'bodyMode NONE sends no body: remove bodyTemplate or choose a body mode',
      });
    if ((c.bodyMode === 'RAW' || c.bodyMode === 'FORM_URLENCODED') && !c.bodyTemplate)
      ctx.addIssue({
        code: 'custom',
        path: ['bodyTemplate'],
        message: `bodyMode ${c.bodyMode} needs a bodyTemplate`,
      });
    if (c.bodyTemplate)
      for (const message of templateProblems(c.bodyTemplate, { allowTable: false }))
        ctx.addIssue({ code: 'custom', path: ['bodyTemplate'], message });
  });

export type WebhookActionConfig = z.infer<typeof WebhookConfigSchema>;

/**
 * A strict email address: ASCII dot-atom local part and a DNS domain (no display names, quotes,
 * comments, spaces, commas, angle brackets, CR or LF), so no address can add a header or a recipient.
 */
const LOCAL = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/;
const LABEL = /^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;

export function isEmailAddress(s: string): boolean {
  if (s.length > LIMITS.address) return false;
  const at = s.lastIndexOf('@');
  if (at < 1) return false;
  const local = s.slice(0, at);
  const domain = s.slice(at + 1);
  if (local.length > 64 || !LOCAL.test(local)) return false;
  const labels = domain.split('.');
  if (labels.length < 2 || domain.length > 253) return false;
  if (!labels.every((l) => LABEL.test(l))) return false;
  const tld = labels[labels.length - 1];
  return /^[A-Za-z]{2,63}$/.test(tld) || /^xn--[A-Za-z0-9-]{1,59}$/.test(tld);
}

const address = z
  .string()
  .transform((s) => s.replace(/^[ \t]+|[ \t]+$/g, ''))
  .refine(
    isEmailAddress,
    'not a valid email address (plain name@domain.tld, no display name or line breaks)',
  );

/** `to` and `cc` accept an array of addresses or one comma-separated string. */
const recipients = (field: string, min: number) =>
  z.preprocess(
    (v) => (typeof v === 'string' ? (v.trim() === '' ? [] : v.split(',')) : v),
    z
      .array(address, `${field} is an array of email addresses`)
      .min(min, `${field} needs at least ${min} address`)
      .max(LIMITS.recipients, `${field} has at most ${LIMITS.recipients} addresses`),
  );

export const EmailConfigSchema = z
  .strictObject({
    to: recipients('to', 1),
    cc: recipients('cc', 0).default([]),
    subject: z
      .string('subject is required')
      .min(1, 'subject is required')
      .max(LIMITS.subject, `at most ${LIMITS.subject} characters`)
      .refine(noLineBreaks, 'a subject may not contain CR, LF or NUL'),
    body: z.string().max(LIMITS.emailBody, `at most ${LIMITS.emailBody} characters`).default(''),
    attachCsv: z.boolean('attachCsv is a boolean').default(false),
    includeTable: z.boolean('includeTable is a boolean').default(false),
    critical: z.boolean('critical is a boolean').default(true),
  })
  .superRefine((c, ctx) => {
    if (c.to.length + c.cc.length > LIMITS.recipients)
      ctx.addIssue({
        code: 'custom',
        path: ['cc'],
        message: `to and cc have at most ${LIMITS.recipients} addresses in all (the SES limit per message)`,
      });
    for (const message of templateProblems(c.subject, { allowTable: false }))
      ctx.addIssue({ code: 'custom', path: ['subject'], message });
    for (const message of templateProblems(c.body, { allowTable: true }))
      ctx.addIssue({ code: 'custom', path: ['body'], message });
  });

export type EmailActionConfig = z.infer<typeof EmailConfigSchema>;

export function secretQueryParameters(url: URL): string[] {
  return [...new Set([...url.searchParams.keys()].filter((k) => SECRET_QUERY.test(k)))];
}
