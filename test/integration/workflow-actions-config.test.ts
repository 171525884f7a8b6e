import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppError } from '../../shared/platform/errors';
import {
  actionPublishProblems,
  credentialIdsOf,
  parseActionConfig,
  sanitizeActionConfig,
} from '../../shared/workflows/actions';
import type { EmailActionConfig, WebhookActionConfig } from '../../shared/workflows/actions/config';
import { type HttpsReceiver, startHttpsReceiver } from '../support/https-receiver';
import { startTestServer, type TestServer } from '../support/server';

/**
 * Action configuration rules: the hostile table (every case a 400 VALIDATION_ERROR naming the field,
 * nothing sent to the receiver), defaults, sanitized output and the publish checks against real
 * stored credentials.
 */

let server: TestServer;
let receiver: HttpsReceiver;
let orgId: string;
let credentialId: string;
const PATH = 'body.actions.3.config';

beforeAll(async () => {
  receiver = await startHttpsReceiver();
  server = await startTestServer({ env: { LOUPE_OUTBOUND_TEST_HOSTS: receiver.testHostEntry } });
  orgId = server.app.orgId;
  const res = await server.call('POST', '/workflow-credentials', {
    body: {
      name: 'only elsewhere',
      kind: 'BEARER',
      allowedHosts: ['hooks.example.com'],
      config: { token: 'x'.repeat(20) },
    },
  });
  expect(res.status, res.text).toBe(201);
  credentialId = res.body.data.id;
});

afterAll(async () => {
  await server?.stop();
  await receiver?.close();
});

/** Table rows are built before the receiver starts: RECEIVER_HOST is replaced by its hostname. */
const webhook = (over: Record<string, unknown> = {}) => ({
  version: 2,
  url: 'https://RECEIVER_HOST/in',
  method: 'POST',
  bodyMode: 'JSON',
  ...over,
});

const email = (over: Record<string, unknown> = {}) => ({
  to: ['ops@example.com'],
  subject: 'Report {{query_1.row_count}}',
  ...over,
});

function materialize(raw: unknown): unknown {
  if (typeof raw === 'string') return raw.replaceAll('RECEIVER_HOST', receiver.hostname);
  if (raw === null || typeof raw !== 'object') return raw;
  return JSON.parse(JSON.stringify(raw).replaceAll('RECEIVER_HOST', receiver.hostname));
}

async function issuesOf(
  type: 'WEBHOOK' | 'EMAIL',
  raw: unknown,
): Promise<{ path: string; message: string }[]> {
  try {
    await parseActionConfig(orgId, type, materialize(raw), PATH);
  } catch (e) {
    expect(e).toBeInstanceOf(AppError);
    const err = e as AppError;
    expect(err.status).toBe(400);
    expect(err.code).toBe('VALIDATION_ERROR');
    return (err.details as { issues: { path: string; message: string }[] }).issues;
  }
  throw new Error(`accepted: ${JSON.stringify(raw)}`);
}

describe('webhook config', () => {
  it('applies the defaults and accepts a JSON-encoded string', async () => {
    const c = (await parseActionConfig(
      orgId,
      'WEBHOOK',
      materialize(JSON.stringify(webhook())),
      PATH,
    )) as WebhookActionConfig;
    expect(c).toEqual({
      version: 2,
      url: `${receiver.url}/in`,
      method: 'POST',
      credentialId: null,
      headers: [],
      bodyMode: 'JSON',
      bodyTemplate: null,
      contentType: null,
      timeoutMs: 10000,
      retry: { maxAttempts: 3, baseDelayMs: 500 },
      successStatusCodes: null,
      critical: true,
    });
    expect(credentialIdsOf('WEBHOOK', c)).toEqual([]);
    expect(JSON.parse(sanitizeActionConfig('WEBHOOK', c))).toEqual(c);
  });

  const hostile: [string, unknown, string][] = [
    ['not an object', 42, ''],
    ['array', [webhook()], ''],
    ['broken JSON string', '{"version":2,', ''],
    ['version 1', webhook({ version: 1 }), 'version'],
    ['version "2"', webhook({ version: '2' }), 'version'],
    ['no url', webhook({ url: undefined }), 'url'],
    ['http', webhook({ url: 'http://RECEIVER_HOST/in' }), 'url'],
    ['port 8443', webhook({ url: 'https://example.com:8443/in' }), 'url'],
    ['userinfo', webhook({ url: 'https://user:pw@example.com/in' }), 'url'],
    ['loopback literal', webhook({ url: 'https://127.0.0.1/in' }), 'url'],
    ['metadata address', webhook({ url: 'https://169.254.169.254/latest/meta-data' }), 'url'],
    ['decimal IPv4', webhook({ url: 'https://2130706433/' }), 'url'],
    ['IPv6 loopback', webhook({ url: 'https://[::1]/' }), 'url'],
    ['IPv4-mapped', webhook({ url: 'https://[::ffff:10.0.0.1]/' }), 'url'],
    ['localhost', webhook({ url: 'https://localhost/' }), 'url'],
    ['private literal', webhook({ url: 'https://10.1.2.3/' }), 'url'],
    ['not a URL', webhook({ url: 'javascript:alert(1)' }), 'url'],
    ['secret in query', webhook({ url: `https://example.com/in?api_key=abc` }), 'url'],
    ['token in query', webhook({ url: `https://example.com/in?access_token=abc` }), 'url'],
    ['method TRACE', webhook({ method: 'TRACE' }), 'method'],
    ['method lower case', webhook({ method: 'post' }), 'method'],
    ['bodyMode XML', webhook({ bodyMode: 'XML' }), 'bodyMode'],
    ['GET with a body', webhook({ method: 'GET', bodyMode: 'JSON' }), 'bodyMode'],
    ['NONE with a template', webhook({ bodyMode: 'NONE', bodyTemplate: 'x' }), 'bodyTemplate'],
    ['RAW without a template', webhook({ bodyMode: 'RAW' }), 'bodyTemplate'],
    ['JSON template not JSON', webhook({ bodyTemplate: '{"a": {{query_1.rows}' }), 'bodyTemplate'],
    [
      'JSON placeholder unquoted text',
      webhook({ bodyTemplate: '{"a": x{{workflow.name}}}' }),
      'bodyTemplate',
    ],
    [
      'unknown placeholder',
      webhook({ bodyTemplate: '{"a": "{{env.AWS_SECRET_ACCESS_KEY}}"}' }),
      'bodyTemplate',
    ],
    ['table in a webhook', webhook({ bodyTemplate: '"{{query_1.table}}"' }), 'bodyTemplate'],
    ['query_6', webhook({ bodyTemplate: '{{query_6.rows}}' }), 'bodyTemplate'],
    [
      'Authorization header',
      webhook({ headers: [{ name: 'Authorization', value: 'Bearer x' }] }),
      'headers.0.name',
    ],
    ['authorization lower', webhook({ headers: [{ name: 'authorization', value: 'x' }] }), 'headers.0.name'],
    [
      'Proxy-Authorization',
      webhook({ headers: [{ name: 'Proxy-Authorization', value: 'x' }] }),
      'headers.0.name',
    ],
    ['Cookie', webhook({ headers: [{ name: 'COOKIE', value: 'a=b' }] }), 'headers.0.name'],
    ['X-Api-Key', webhook({ headers: [{ name: 'x-api-key', value: 'k' }] }), 'headers.0.name'],
    ['X-Auth-Token', webhook({ headers: [{ name: 'X-Auth-Token', value: 'k' }] }), 'headers.0.name'],
    ['…secret…', webhook({ headers: [{ name: 'X-Client-Secret', value: 'k' }] }), 'headers.0.name'],
    ['…token…', webhook({ headers: [{ name: 'X-CSRFTOKEN', value: 'k' }] }), 'headers.0.name'],
    ['…password…', webhook({ headers: [{ name: 'X-Password-Hint', value: 'k' }] }), 'headers.0.name'],
    ['…api-key…', webhook({ headers: [{ name: 'My-Api-Key-2', value: 'k' }] }), 'headers.0.name'],
    ['header name with space', webhook({ headers: [{ name: 'X Team', value: 'k' }] }), 'headers.0.name'],
    ['header name with colon', webhook({ headers: [{ name: 'X-A:b', value: 'k' }] }), 'headers.0.name'],
    [
      'header value CRLF',
      webhook({ headers: [{ name: 'X-A', value: 'a\r\nX-Injected: 1' }] }),
      'headers.0.value',
    ],
    ['header value LF', webhook({ headers: [{ name: 'X-A', value: 'a\nb' }] }), 'headers.0.value'],
    ['Host header', webhook({ headers: [{ name: 'Host', value: 'internal' }] }), 'headers.0.name'],
    [
      'Content-Length header',
      webhook({ headers: [{ name: 'content-length', value: '1' }] }),
      'headers.0.name',
    ],
    [
      'duplicate header',
      webhook({
        headers: [
          { name: 'X-A', value: '1' },
          { name: 'x-a', value: '2' },
        ],
      }),
      'headers.1.name',
    ],
    [
      '21 headers',
      webhook({ headers: Array.from({ length: 21 }, (_, i) => ({ name: `X-H${i}`, value: 'v' })) }),
      'headers',
    ],
    ['header extra field', webhook({ headers: [{ name: 'X-A', value: 'v', secret: true }] }), 'headers.0'],
    ['contentType CRLF', webhook({ contentType: 'text/plain\r\nX-B: 1' }), 'contentType'],
    ['contentType not a type', webhook({ contentType: 'json' }), 'contentType'],
    ['timeout 999', webhook({ timeoutMs: 999 }), 'timeoutMs'],
    ['timeout 30001', webhook({ timeoutMs: 30001 }), 'timeoutMs'],
    ['timeout 1.5', webhook({ timeoutMs: 1500.5 }), 'timeoutMs'],
    ['timeout string', webhook({ timeoutMs: '1000' }), 'timeoutMs'],
    ['maxAttempts 0', webhook({ retry: { maxAttempts: 0 } }), 'retry.maxAttempts'],
    ['maxAttempts 6', webhook({ retry: { maxAttempts: 6 } }), 'retry.maxAttempts'],
    ['baseDelayMs 99', webhook({ retry: { baseDelayMs: 99 } }), 'retry.baseDelayMs'],
    ['baseDelayMs 30001', webhook({ retry: { baseDelayMs: 30001 } }), 'retry.baseDelayMs'],
    ['successStatusCodes empty', webhook({ successStatusCodes: [] }), 'successStatusCodes'],
    ['successStatusCodes 99', webhook({ successStatusCodes: [99] }), 'successStatusCodes.0'],
    ['successStatusCodes 600', webhook({ successStatusCodes: [200, 600] }), 'successStatusCodes.1'],
    ['successStatusCodes duplicate', webhook({ successStatusCodes: [200, 200] }), 'successStatusCodes'],
    [
      'successStatusCodes 21',
      webhook({ successStatusCodes: Array.from({ length: 21 }, (_, i) => 200 + i) }),
      'successStatusCodes',
    ],
    ['critical "yes"', webhook({ critical: 'yes' }), 'critical'],
    ['credentialId not uuid', webhook({ credentialId: 'abc' }), 'credentialId'],
    ['unknown field', webhook({ secretHeaders: { a: 1 } }), ''],
    // Every C0 control (TAB included), DEL, every C1 control and the Unicode line and paragraph separators.
    ...[
      ...Array.from({ length: 0x20 }, (_, c) => c),
      0x7f,
      ...Array.from({ length: 0x20 }, (_, c) => 0x80 + c),
      0x2028,
      0x2029,
    ].map(
      (c) =>
        [
          `header value with U+${c.toString(16).toUpperCase().padStart(4, '0')}`,
          webhook({ headers: [{ name: 'X-A', value: `a${String.fromCharCode(c)}b` }] }),
          'headers.0.value',
        ] as [string, unknown, string],
    ),
  ];

  it.each(hostile)('%s → 400 naming the field', async (_name, raw, field) => {
    const before = receiver.connections;
    const issues = await issuesOf('WEBHOOK', raw);
    const want = field ? `${PATH}.${field}` : PATH;
    expect(issues.map((i) => i.path)).toContain(want);
    for (const i of issues) expect(i.path.startsWith(PATH)).toBe(true);
    expect(receiver.connections).toBe(before);
  });

  it('secret header refusals say to use a credential', async () => {
    const [issue] = await issuesOf('WEBHOOK', webhook({ headers: [{ name: 'Authorization', value: 'x' }] }));
    expect(issue.message).toMatch(/use a credential/);
  });

  it('every problem of one config is listed together', async () => {
    const issues = await issuesOf(
      'WEBHOOK',
      webhook({ url: 'https://127.0.0.1/', method: 'X', timeoutMs: 5 }),
    );
    expect(issues.map((i) => i.path).sort()).toEqual([`${PATH}.method`, `${PATH}.timeoutMs`, `${PATH}.url`]);
  });

  it('publish problems: missing credential and a host outside allowedHosts are errors; warnings are exact', async () => {
    const withCred = (await parseActionConfig(
      orgId,
      'WEBHOOK',
      materialize(webhook({ credentialId, critical: false, retry: { maxAttempts: 1 } })),
      PATH,
    )) as WebhookActionConfig;
    expect(credentialIdsOf('WEBHOOK', withCred)).toEqual([credentialId]);
    expect(await actionPublishProblems(orgId, 'WEBHOOK', withCred)).toEqual({
      errors: [
        `The webhook host ${receiver.hostname} is not in the allowed hosts of credential "only elsewhere" (hooks.example.com).`,
      ],
      warnings: [
        `The webhook to ${receiver.hostname} is not critical: when it fails the run ends PARTIAL_SUCCESS, not FAILED.`,
        `The webhook to ${receiver.hostname} is tried once: a temporary failure is not retried.`,
      ],
    });
    const missing = { ...withCred, credentialId: '00000000-0000-4000-8000-000000000001' };
    expect((await actionPublishProblems(orgId, 'WEBHOOK', missing)).errors).toEqual([
      `The webhook to ${receiver.hostname} uses credential 00000000-0000-4000-8000-000000000001, which does not exist.`,
    ]);
    // Another organization cannot use the credential: it does not exist there.
    expect((await actionPublishProblems('another-org', 'WEBHOOK', withCred)).errors[0]).toMatch(
      /does not exist/,
    );
    const plain = (await parseActionConfig(
      orgId,
      'WEBHOOK',
      materialize(webhook({ method: 'PUT', bodyMode: 'NONE' })),
      PATH,
    )) as WebhookActionConfig;
    expect(await actionPublishProblems(orgId, 'WEBHOOK', plain)).toEqual({
      errors: [],
      warnings: [
        `The webhook to ${receiver.hostname} sends PUT without a body: no query results are delivered.`,
      ],
    });
  });

  it('sanitized output drops inline secret headers of legacy configs', () => {
    const legacy = {
      version: 2,
      url: 'https://example.com/',
      method: 'POST',
      credentialId: null,
      headers: [
        { name: 'Authorization', value: 'Bearer legacy-secret' },
        { name: 'X-Team', value: 'a' },
      ],
      bodyMode: 'NONE',
      bodyTemplate: null,
      contentType: null,
      timeoutMs: 10000,
      retry: { maxAttempts: 3, baseDelayMs: 500 },
      successStatusCodes: null,
      critical: true,
    } as WebhookActionConfig;
    const text = sanitizeActionConfig('WEBHOOK', legacy);
    expect(text).not.toContain('legacy-secret');
    expect(JSON.parse(text).headers).toEqual([{ name: 'X-Team', value: 'a' }]);
  });
});

describe('email config', () => {
  it('applies the defaults; to may be a comma-separated string', async () => {
    const c = (await parseActionConfig(
      orgId,
      'EMAIL',
      email({ to: 'a@example.com, b@example.org' }),
      PATH,
    )) as EmailActionConfig;
    expect(c).toEqual({
      to: ['a@example.com', 'b@example.org'],
      cc: [],
      subject: 'Report {{query_1.row_count}}',
      body: '',
      attachCsv: false,
      includeTable: false,
      critical: true,
    });
    expect(credentialIdsOf('EMAIL', c)).toEqual([]);
  });

  const hostile: [string, unknown, string][] = [
    ['no to', email({ to: undefined }), 'to'],
    ['empty to', email({ to: [] }), 'to'],
    ['51 recipients', email({ to: Array.from({ length: 51 }, (_, i) => `u${i}@example.com`) }), 'to'],
    ['CRLF in address', email({ to: ['a@example.com\r\nBcc: victim@example.com'] }), 'to.0'],
    ['LF in address', email({ to: ['a@example.com\nb@example.com'] }), 'to.0'],
    ['display name', email({ to: ['Ada <ada@example.com>'] }), 'to.0'],
    ['two in one', email({ to: ['a@example.com;b@example.com'] }), 'to.0'],
    ['no domain dot', email({ to: ['a@localhost'] }), 'to.0'],
    ['quoted local', email({ to: ['"a b"@example.com'] }), 'to.0'],
    ['double dot', email({ to: ['a..b@example.com'] }), 'to.0'],
    ['no local', email({ to: ['@example.com'] }), 'to.0'],
    ['IP domain', email({ to: ['a@[127.0.0.1]'] }), 'to.0'],
    ['unicode local', email({ to: ['jos\u00e9@example.com'] }), 'to.0'],
    ['too long', email({ to: [`${'a'.repeat(65)}@example.com`] }), 'to.0'],
    ['bad cc', email({ cc: ['nope'] }), 'cc.0'],
    [
      '51 recipients with cc',
      email({
        to: Array.from({ length: 30 }, (_, i) => `u${i}@example.com`),
        cc: Array.from({ length: 21 }, (_, i) => `c${i}@example.com`),
      }),
      'cc',
    ],
    ['cc CRLF', email({ cc: 'a@example.com\r\nX: y' }), 'cc.0'],
    ['subject CRLF', email({ subject: 'Hi\r\nBcc: x@example.com' }), 'subject'],
    ['subject empty', email({ subject: '' }), 'subject'],
    ['subject too long', email({ subject: 's'.repeat(501) }), 'subject'],
    ['subject table', email({ subject: '{{query_1.table}}' }), 'subject'],
    ['body unknown placeholder', email({ body: 'x {{query_1.password}}' }), 'body'],
    ['body not a string', email({ body: 5 }), 'body'],
    ['attachCsv "true"', email({ attachCsv: 'true' }), 'attachCsv'],
    ['includeTable 1', email({ includeTable: 1 }), 'includeTable'],
    ['unknown field bcc', email({ bcc: ['a@example.com'] }), ''],
    ['unknown field from', email({ from: 'ceo@bank.example' }), ''],
  ];

  it.each(hostile)('%s → 400 naming the field', async (_name, raw, field) => {
    const issues = await issuesOf('EMAIL', raw);
    expect(issues.map((i) => i.path)).toContain(field ? `${PATH}.${field}` : PATH);
  });

  it('publish warnings for email in the local runtime', async () => {
    const c = (await parseActionConfig(
      orgId,
      'EMAIL',
      email({ subject: 'Hello', critical: false }),
      PATH,
    )) as EmailActionConfig;
    expect(await actionPublishProblems(orgId, 'EMAIL', c)).toEqual({
      errors: [],
      warnings: [
        'Email is written to the local outbox folder (.data/outbox), not sent: set SMTP_URL to send it.',
        'The email "Hello" includes no query results (no query placeholder, includeTable or attachCsv).',
        'The email "Hello" is not critical: when it fails the run ends PARTIAL_SUCCESS, not FAILED.',
      ],
    });
  });
});
