import { newId, nowIso } from '../../platform/ids';
import { type MailSent, mail } from '../../platform/mail';
import { MailFailed } from '../../platform/mail/port';
import type { EmailActionConfig } from './config';
import { buildEmail } from './email';
import type { TemplateContext } from './template';
import type { ActionAttempt, DeliverInput, DeliverOutcome } from './types';
import { bound, MIN_ATTEMPT_MS, STORED_ERROR_CHARS } from './util';

/** Characters of the `mailto:` address list stored with an attempt. */
const STORED_MAILTO_CHARS = 1000;

/**
 * What an email attempt stores as its url: `mailto:` and the To addresses (comma-separated, bounded;
 * Cc recipients are counted in the summary, not listed). Addresses were validated strictly at save time.
 */
export function mailtoOf(config: EmailActionConfig): string {
  const all = `mailto:${config.to.join(',')}`;
  if (all.length <= STORED_MAILTO_CHARS) return all;
  let out = 'mailto:';
  let i = 0;
  for (; i < config.to.length; i++) {
    const next = `${out}${i ? ',' : ''}${config.to[i]}`;
    if (next.length > STORED_MAILTO_CHARS - 20) break;
    out = next;
  }
  return `${out}(+${config.to.length - i} more)`;
}

/**
 * Sends one email action through the mail port: one attempt per send (no automatic resend, so a
 * recipient never gets the same report twice after an ambiguous failure). The attempt's method is
 * `SMTP` for SMTP and `EMAIL` for SES and the local outbox.
 */
export async function deliverEmail(input: DeliverInput, ctx: TemplateContext): Promise<DeliverOutcome> {
  const config = input.action.config as EmailActionConfig;
  let transport: 'SES' | 'SMTP' | 'OUTBOX' | 'NONE' = 'NONE';
  let port: ReturnType<typeof mail> | undefined;
  let portError: string | undefined;
  try {
    port = mail();
    transport = port.transport;
  } catch (e) {
    portError = (e as Error).message;
  }
  const a: ActionAttempt = {
    id: newId(),
    runId: input.runId,
    actionId: input.action.id,
    actionOrder: input.action.order,
    attempt: 1,
    status: 'RUNNING',
    method: transport === 'SMTP' ? 'SMTP' : 'EMAIL',
    url: mailtoOf(config),
    requestBodyBytes: 0,
    statusCode: null,
    durationMs: null,
    responseHeaders: null,
    responseBody: null,
    error: null,
    startedAt: nowIso(),
    completedAt: null,
  };
  await input.onAttempt({ ...a });
  const t0 = Date.now();
  let sent: MailSent | undefined;
  let error: string | null = null;
  try {
    if (!port) throw new Error(portError ?? 'Email is not configured.');
    const left = input.deadline - Date.now();
    if (left < MIN_ATTEMPT_MS) throw new Error('Not sent: no time left before the run deadline.');
    const message = buildEmail(config, ctx);
    sent = await port.send(message, { timeoutMs: Math.min(30_000, left) });
  } catch (e) {
    error = bound((e as Error).message, STORED_ERROR_CHARS);
    if (e instanceof MailFailed) {
      a.statusCode = e.statusCode;
      a.requestBodyBytes = e.rawBytes;
    }
  }
  Object.assign(a, {
    status: sent ? 'SUCCESS' : 'FAILED',
    durationMs: Date.now() - t0,
    completedAt: nowIso(),
    error,
    ...(sent
      ? {
          statusCode: sent.statusCode,
          requestBodyBytes: sent.rawBytes,
          responseHeaders: JSON.stringify({ 'message-id': bound(sent.messageId, 256), transport }),
          responseBody: bound(sent.response, 1000),
        }
      : {}),
  });
  await input.onAttempt({ ...a });
  return {
    success: !!sent,
    critical: config.critical,
    attempts: [a],
    error,
    summary: {
      type: 'EMAIL',
      order: input.action.order,
      actionId: input.action.id,
      transport,
      success: !!sent,
      critical: config.critical,
      recipients: config.to.length + config.cc.length,
      attachments: config.attachCsv ? ctx.steps.length : 0,
      attempts: 1,
      error,
    },
  };
}
