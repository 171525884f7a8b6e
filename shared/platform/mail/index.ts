import { join } from 'node:path';
import { config } from '../config';
import { OutboxMail } from './outbox';
import type { Mail } from './port';
import { SesMail } from './ses';
import { SmtpMail } from './smtp';

export type { Mail, MailAttachment, MailMessage, MailSent, MailTransport } from './port';
export { MailFailed } from './port';

let instance: Mail | undefined;

/** The From address: LOUPE_MAIL_FROM, else the SES identity when it is an address, else loupe@<domain identity>. */
export function mailFrom(): string | undefined {
  const cfg = config();
  if (cfg.LOUPE_MAIL_FROM) return cfg.LOUPE_MAIL_FROM;
  const id = cfg.LOUPE_SES_IDENTITY;
  if (id && !id.startsWith('arn:')) return id.includes('@') ? id : `loupe@${id}`;
  return cfg.runtime === 'aws' ? undefined : 'loupe@localhost';
}

/** Why mail cannot be sent in this runtime, or undefined when it can. */
export function mailUnavailable(): string | undefined {
  const cfg = config();
  if (cfg.runtime !== 'aws') return undefined;
  if (!cfg.LOUPE_SES_IDENTITY)
    return 'Email is not configured: set LOUPE_SES_IDENTITY to a verified SES identity.';
  if (!mailFrom()) return 'Email is not configured: set LOUPE_MAIL_FROM (the identity is an ARN).';
  return undefined;
}

/**
 * The mail port for this runtime: SES (v2) in AWS with LOUPE_SES_IDENTITY; locally SMTP when SMTP_URL
 * is set, else the outbox folder `<LOUPE_DATA_DIR>/outbox`.
 */
export function mail(): Mail {
  if (instance) return instance;
  const cfg = config();
  const problem = mailUnavailable();
  if (problem) throw new Error(problem);
  const from = mailFrom()!;
  if (cfg.runtime === 'aws') instance = new SesMail(cfg.LOUPE_SES_IDENTITY!, from);
  else if (cfg.SMTP_URL) instance = new SmtpMail(cfg.SMTP_URL, from);
  else instance = new OutboxMail(join(cfg.LOUPE_DATA_DIR, 'outbox'), from);
  return instance;
}

export function resetMail(): void {
  instance = undefined;
}
