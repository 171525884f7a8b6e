import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SESv2Client, SendEmailCommand } from '@aws-sdk/client-sesv2';
import { mockClient } from 'aws-sdk-client-mock';
import { type ParsedMail, simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { resetConfig } from '../../shared/platform/config';
import { mail, resetMail } from '../../shared/platform/mail';
import { deliverAction, parseActionConfig } from '../../shared/workflows/actions';
import type { EmailActionConfig } from '../../shared/workflows/actions/config';
import type { ActionAttempt, DeliverInput, StepOutput } from '../../shared/workflows/actions/types';

/** A real SMTP server on a random loopback port, keeping every message as raw bytes. */
interface Received {
  from: string;
  to: string[];
  raw: Buffer;
}

const received: Received[] = [];
let rejectNext: { code: number; message: string } | undefined;
let smtp: SMTPServer;
let smtpPort: number;
const dataDir = mkdtempSync(join(tmpdir(), 'loupe-mail-'));
const savedEnv = { ...process.env };

beforeAll(async () => {
  smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, session, cb) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        if (rejectNext) {
          const err = Object.assign(new Error(rejectNext.message), { responseCode: rejectNext.code });
          rejectNext = undefined;
          return cb(err);
        }
        received.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          raw: Buffer.concat(chunks),
        });
        cb();
      });
    },
  });
  await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
  smtpPort = (smtp.server.address() as AddressInfo).port;
});

afterAll(async () => {
  await new Promise<void>((resolve) => smtp.close(() => resolve()));
  rmSync(dataDir, { recursive: true, force: true });
});

afterEach(() => {
  process.env = { ...savedEnv };
  resetConfig();
  resetMail();
});

function useEnv(env: Record<string, string | undefined>) {
  process.env = { ...savedEnv, LOUPE_DATA_DIR: dataDir, ...env };
  for (const k of Object.keys(env)) if (env[k] === undefined) delete process.env[k];
  resetConfig();
  resetMail();
}

const steps: StepOutput[] = [
  {
    name: 'Top customers',
    columns: ['name', 'total', 'note'],
    rows: [
      { name: 'Ada <script>alert(1)</script>', total: 12.5, note: '=HYPERLINK("http://evil")' },
      { name: 'Bob "the, builder"', total: -3, note: 'line\nbreak' },
    ],
    rowCount: 2,
  },
  { name: 'empty', columns: ['x'], rows: [], rowCount: 0 },
];

async function emailConfig(over: Record<string, unknown> = {}): Promise<EmailActionConfig> {
  return (await parseActionConfig(
    'org1',
    'EMAIL',
    {
      to: ['ops@example.com', 'cto@example.org'],
      cc: ['audit@example.net'],
      subject: 'Report {{workflow.name}}: {{query_1.row_count}} rows',
      body: '# Daily report\n\nRun `{{run.id}}`.\n\n{{query_1.table}}\n\nThanks.',
      attachCsv: true,
      ...over,
    },
    'body.actions.0.config',
  )) as EmailActionConfig;
}

function input(config: EmailActionConfig, attempts: ActionAttempt[]): DeliverInput {
  return {
    orgId: 'org1',
    userId: 'user1',
    runId: '11111111-2222-4333-8444-555555555555',
    workflow: { id: 'wf1', name: 'Sales "EU" \u00e9' },
    scheduledFor: null,
    steps,
    action: { id: 'act1', order: 0, type: 'EMAIL', config },
    deadline: Date.now() + 60_000,
    onAttempt: async (a) => {
      attempts.push(a);
    },
  };
}

function expectReport(mail: ParsedMail) {
  expect(mail.subject).toBe('Report Sales "EU" \u00e9: 2 rows');
  expect(mail.html).toContain('<h1>Daily report</h1>');
  expect(mail.html).toContain('<code>11111111-2222-4333-8444-555555555555</code>');
  expect(mail.html).toMatch(/<table[^>]*>.*<th[^>]*>name<\/th>/s);
  expect(mail.html).toContain('Ada &lt;script&gt;alert(1)&lt;/script&gt;');
  expect(mail.html).not.toContain('<script>');
  expect(mail.text).toContain('Ada <script>alert(1)</script>\t12.5');
  const csv = mail.attachments.map((a) => ({
    name: a.filename,
    type: a.contentType,
    text: a.content.toString(),
  }));
  expect(csv).toEqual([
    {
      name: 'query_1-Top-customers.csv',
      type: 'text/csv',
      text:
        'name,total,note\r\n' +
        'Ada <script>alert(1)</script>,12.5,"\'=HYPERLINK(""http://evil"")"\r\n' +
        '"Bob ""the, builder""",-3,"line\nbreak"\r\n',
    },
    { name: 'query_2-empty.csv', type: 'text/csv', text: 'x\r\n' },
  ]);
}

describe('email actions', () => {
  it('SMTP: a real server receives the rendered subject, the HTML table and the CSV attachments', async () => {
    useEnv({ SMTP_URL: `smtp://127.0.0.1:${smtpPort}`, LOUPE_MAIL_FROM: 'reports@loupe.example' });
    const attempts: ActionAttempt[] = [];
    received.length = 0;
    const out = await deliverAction(input(await emailConfig(), attempts));
    expect(out.success).toBe(true);
    expect(out.error).toBeNull();
    expect(received).toHaveLength(1);
    expect(received[0].from).toBe('reports@loupe.example');
    expect(received[0].to.sort()).toEqual(['audit@example.net', 'cto@example.org', 'ops@example.com']);
    const mail = await simpleParser(received[0].raw);
    expect(mail.from?.text).toBe('reports@loupe.example');
    expect(mail.cc && !Array.isArray(mail.cc) ? mail.cc.text : '').toBe('audit@example.net');
    expectReport(mail);
    // One attempt, recorded at start and at the end.
    expect(attempts.map((a) => a.status)).toEqual(['RUNNING', 'SUCCESS']);
    const a = attempts[1];
    expect(a).toMatchObject({
      method: 'SMTP',
      url: 'mailto:ops@example.com,cto@example.org',
      attempt: 1,
      statusCode: 250,
      requestBodyBytes: received[0].raw.length,
      error: null,
    });
    expect(a.id).toBe(attempts[0].id);
    expect(JSON.parse(a.responseHeaders!)['message-id']).toBe(mail.messageId);
    expect(out.summary).toMatchObject({ type: 'EMAIL', transport: 'SMTP', success: true, recipients: 3 });
  });

  it('SMTP: a value with CR/LF cannot add a header or a recipient', async () => {
    useEnv({ SMTP_URL: `smtp://127.0.0.1:${smtpPort}` });
    received.length = 0;
    const attempts: ActionAttempt[] = [];
    const i = input(await emailConfig({ subject: '{{workflow.name}} ({{query_1.row_count}})' }), attempts);
    i.workflow = { id: 'wf1', name: 'Evil\r\nBcc: victim@evil.example\r\nX-Injected: 1\n\nbody' };
    const out = await deliverAction(i);
    expect(out.success).toBe(true);
    expect(received[0].to).not.toContain('victim@evil.example');
    const mail = await simpleParser(received[0].raw);
    expect(mail.subject).toBe('Evil Bcc: victim@evil.example X-Injected: 1 body (2)');
    expect(mail.bcc).toBeUndefined();
    expect(mail.headers.has('x-injected')).toBe(false);
  });

  it('SMTP: a rejected message is a failed attempt with the reply code', async () => {
    useEnv({ SMTP_URL: `smtp://127.0.0.1:${smtpPort}` });
    rejectNext = { code: 552, message: 'Message size exceeds fixed maximum message size' };
    const attempts: ActionAttempt[] = [];
    const out = await deliverAction(input(await emailConfig({ critical: false }), attempts));
    expect(out).toMatchObject({ success: false, critical: false });
    expect(attempts[1]).toMatchObject({ status: 'FAILED', statusCode: 552, method: 'SMTP' });
    expect(attempts[1].error).toMatch(/Message size exceeds/);
  });

  it('SMTP: an unreachable server fails the attempt without throwing', async () => {
    useEnv({ SMTP_URL: 'smtp://127.0.0.1:1' });
    const attempts: ActionAttempt[] = [];
    const out = await deliverAction(input(await emailConfig(), attempts));
    expect(out.success).toBe(false);
    expect(attempts[1].status).toBe('FAILED');
    expect(attempts[1].error).toMatch(/SMTP send failed/);
  });

  it('the mail port follows the configuration: a reset configuration picks the new transport', () => {
    useEnv({ SMTP_URL: `smtp://127.0.0.1:${smtpPort}` });
    expect(mail().transport).toBe('SMTP');
    delete process.env.SMTP_URL;
    resetConfig(); // as the local runtime does at start; no resetMail
    expect(mail().transport).toBe('OUTBOX');
  });

  it('without SMTP_URL the message is written to the .data/outbox folder as .eml', async () => {
    useEnv({ SMTP_URL: undefined });
    const attempts: ActionAttempt[] = [];
    const out = await deliverAction(input(await emailConfig(), attempts));
    expect(out.success).toBe(true);
    const files = readdirSync(join(dataDir, 'outbox')).filter((f) => f.endsWith('.eml'));
    expect(files).toHaveLength(1);
    const mail = await simpleParser(readFileSync(join(dataDir, 'outbox', files[0])));
    expect(mail.from?.text).toBe('loupe@localhost');
    expectReport(mail);
    expect(attempts[1]).toMatchObject({ method: 'EMAIL', status: 'SUCCESS', statusCode: null });
    expect(attempts[1].responseBody).toContain(files[0]);
  });

  it('SES v2 in AWS: SendEmail with the raw MIME message from the configured identity', async () => {
    useEnv({ LOUPE_RUNTIME: 'aws', LOUPE_SES_IDENTITY: 'reports.example.com', AWS_REGION: 'eu-west-1' });
    const ses = mockClient(SESv2Client);
    ses.on(SendEmailCommand).resolves({ MessageId: 'ses-123', $metadata: { httpStatusCode: 200 } });
    try {
      const attempts: ActionAttempt[] = [];
      const out = await deliverAction(input(await emailConfig(), attempts));
      expect(out.success).toBe(true);
      const calls = ses.commandCalls(SendEmailCommand);
      expect(calls).toHaveLength(1);
      const cmd = calls[0].args[0].input;
      expect(cmd.FromEmailAddress).toBe('loupe@reports.example.com');
      expect(cmd.Destination).toEqual({
        ToAddresses: ['ops@example.com', 'cto@example.org'],
        CcAddresses: ['audit@example.net'],
      });
      const mail = await simpleParser(Buffer.from(cmd.Content!.Raw!.Data!));
      expectReport(mail);
      expect(attempts[1]).toMatchObject({ method: 'EMAIL', status: 'SUCCESS', statusCode: 200 });
      expect(attempts[1].responseBody).toBe('SES message ses-123');
    } finally {
      ses.restore();
    }
  });

  it('SES errors are failed attempts; AWS without an identity cannot send', async () => {
    useEnv({
      LOUPE_RUNTIME: 'aws',
      LOUPE_SES_IDENTITY: 'arn:aws:ses:eu-west-1:123456789012:identity/x.example',
      LOUPE_MAIL_FROM: 'a@x.example',
      AWS_REGION: 'eu-west-1',
    });
    const ses = mockClient(SESv2Client);
    ses.on(SendEmailCommand).rejects(
      Object.assign(new Error('Email address is not verified.'), {
        name: 'MessageRejected',
        $metadata: { httpStatusCode: 400 },
      }),
    );
    try {
      const attempts: ActionAttempt[] = [];
      const out = await deliverAction(input(await emailConfig(), attempts));
      expect(out.success).toBe(false);
      expect(attempts[1]).toMatchObject({ status: 'FAILED', statusCode: 400 });
      expect(attempts[1].error).toBe('SES send failed: MessageRejected: Email address is not verified.');
      expect(ses.commandCalls(SendEmailCommand)[0].args[0].input.FromEmailAddressIdentityArn).toBe(
        'arn:aws:ses:eu-west-1:123456789012:identity/x.example',
      );
    } finally {
      ses.restore();
    }
    useEnv({ LOUPE_RUNTIME: 'aws', LOUPE_SES_IDENTITY: undefined });
    const attempts: ActionAttempt[] = [];
    const out = await deliverAction(input(await emailConfig(), attempts));
    expect(out.success).toBe(false);
    expect(attempts[1].error).toMatch(/LOUPE_SES_IDENTITY/);
  });
});
