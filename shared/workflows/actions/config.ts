import * as z from 'zod/mini';
import { HEADER_VALUE } from '../../outbound';
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

/** An integer setting within its LIMITS range, defaulting to its default; messages name it and the range. */
function limitedInt(name: 'timeoutMs' | 'maxAttempts' | 'baseDelayMs') {
  const { min, max, default: fallback } = LIMITS[name];
  const range = `${name} is ${min} to ${max}`;
  return z._default(z.int(`${name} is an integer`).check(z.gte(min, range), z.lte(max, range)), fallback);
}

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

const noLineBreaks = (s: string) => !/[\r\n\0]/.test(s);

const headerSchema = z.strictObject({
  name: z.string().check(
    z.minLength(1, 'a header name is required'),
    z.maxLength(LIMITS.headerName, `at most ${LIMITS.headerName} characters`),
    z.regex(TOKEN, "a header name is an HTTP token (letters, digits and !#$%&'*+.^_`|~-)"),
    z.refine((n) => !isSecretHeaderName(n), {
      message: 'this header carries a secret: use a credential (credentialId) instead of an inline value',
    }),
    z.refine((n) => !MANAGED_HEADERS.has(n.toLowerCase()), {
      message: 'this header is set by Loupe (use contentType for Content-Type)',
    }),
  ),
  value: z
    .pipe(
      z.string(),
      z.transform((v) => v.trim()),
    )
    .check(
      z.refine((v) => v.length > 0, 'a header value is required'),
      z.refine((v) => v.length <= LIMITS.headerValue, `at most ${LIMITS.headerValue} characters`),
      z.refine(
        (v) => HEADER_VALUE.test(v),
        'a header value is printable Latin-1 text: no control characters (C0 such as TAB, CR, LF, NUL; DEL; C1 such as U+0085) and no characters above U+00FF (such as U+2028, U+2029)',
      ),
    ),
});

export const WebhookConfigSchema = z
  .strictObject({
    version: z.literal(2, 'version must be 2'),
    url: z.string().check(z.minLength(1), z.maxLength(LIMITS.url, `at most ${LIMITS.url} characters`)),
    method: z.enum(HTTP_METHODS, 'method is one of GET, POST, PUT, PATCH, DELETE'),
    credentialId: z._default(z.nullable(z.uuid('credentialId is a UUID')), null),
    headers: z
      ._default(
        z.array(headerSchema).check(z.maxLength(LIMITS.headers, `at most ${LIMITS.headers} headers`)),
        [],
      )
      .check(
        z.superRefine((hs, ctx) => {
          const seen = new Set<string>();
          hs.forEach((h, i) => {
            const n = h.name.toLowerCase();
            if (seen.has(n))
              ctx.addIssue({ code: 'custom', path: [i, 'name'], message: `duplicate header ${h.name}` });
            seen.add(n);
          });
        }),
      ),
    bodyMode: z.enum(BODY_MODES, 'bodyMode is one of NONE, JSON, RAW, FORM_URLENCODED'),
    bodyTemplate: z._default(
      z.nullable(
        z.string().check(z.maxLength(LIMITS.bodyTemplate, `at most ${LIMITS.bodyTemplate} characters`)),
      ),
      null,
    ),
    contentType: z._default(
      z.nullable(
        z
          .string()
          .check(
            z.maxLength(LIMITS.contentType),
            z.regex(
              /^[A-Za-z0-9!#$&^_.+-]+\/[A-Za-z0-9!#$&^_.+-]+(\s*;\s*[^\r\n\0]*)?$/,
              'a media type such as application/json',
            ),
            z.refine(noLineBreaks, 'no CR, LF or NUL'),
          ),
      ),
      null,
    ),
    timeoutMs: limitedInt('timeoutMs'),
    retry: z._default(
      z.strictObject({ maxAttempts: limitedInt('maxAttempts'), baseDelayMs: limitedInt('baseDelayMs') }),
      { maxAttempts: LIMITS.maxAttempts.default, baseDelayMs: LIMITS.baseDelayMs.default },
    ),
    successStatusCodes: z._default(
      z.nullable(
        z
          .array(
            z
              .int('a status code is an integer')
              .check(z.gte(100, 'a status code is 100 to 599'), z.lte(599, 'a status code is 100 to 599')),
          )
          .check(
            z.minLength(1, 'successStatusCodes has 1 to 20 codes (omit it to accept every 2xx)'),
            z.maxLength(LIMITS.successStatusCodes, 'successStatusCodes has 1 to 20 codes'),
            z.refine((a) => new Set(a).size === a.length, 'successStatusCodes must be unique'),
          ),
      ),
      null,
    ),
    critical: z._default(z.boolean('critical is a boolean'), true),
  })
  .check(
    z.superRefine((c, ctx) => {
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
    }),
  );

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
  .pipe(
    z.string(),
    z.transform((s) => s.replace(/^[ \t]+|[ \t]+$/g, '')),
  )
  .check(
    z.refine(
      isEmailAddress,
      'not a valid email address (plain name@domain.tld, no display name or line breaks)',
    ),
  );

/** `to` and `cc` accept an array of addresses or one comma-separated string. */
const recipients = (field: string, min: number) =>
  z.pipe(
    z.transform((v) => (typeof v === 'string' ? (v.trim() === '' ? [] : v.split(',')) : v)),
    z
      .array(address, `${field} is an array of email addresses`)
      .check(
        z.minLength(min, `${field} needs at least ${min} address`),
        z.maxLength(LIMITS.recipients, `${field} has at most ${LIMITS.recipients} addresses`),
      ),
  );

export const EmailConfigSchema = z
  .strictObject({
    to: recipients('to', 1),
    cc: z._default(recipients('cc', 0), []),
    subject: z
      .string('subject is required')
      .check(
        z.minLength(1, 'subject is required'),
        z.maxLength(LIMITS.subject, `at most ${LIMITS.subject} characters`),
        z.refine(noLineBreaks, 'a subject may not contain CR, LF or NUL'),
      ),
    body: z._default(
      z.string().check(z.maxLength(LIMITS.emailBody, `at most ${LIMITS.emailBody} characters`)),
      '',
    ),
    attachCsv: z._default(z.boolean('attachCsv is a boolean'), false),
    includeTable: z._default(z.boolean('includeTable is a boolean'), false),
    critical: z._default(z.boolean('critical is a boolean'), true),
  })
  .check(
    z.superRefine((c, ctx) => {
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
    }),
  );

export type EmailActionConfig = z.infer<typeof EmailConfigSchema>;

/** Query parameters that look like secrets are refused in the URL: a credential carries secrets. */
export { secretQueryParameters } from '../../outbound/secret-query';
