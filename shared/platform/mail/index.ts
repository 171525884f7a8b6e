import { join } from 'node:path';
import { config } from '../config';
import { OutboxMail } from './outbox';
import type { Mail } from './port';
import { SesMail } from './ses';
import { mailFrom, mailUnavailable } from './settings';
import { SmtpMail } from './smtp';

export type { Mail, MailAttachment, MailMessage, MailSent, MailTransport } from './port';
export { MailFailed } from './port';
export { mailFrom, mailUnavailable } from './settings';

let instance: Mail | undefined;
/** The configuration the instance was built from: a new configuration (resetConfig) builds a new port. */
let builtFrom: object | undefined;

/**
 * The mail port for this runtime: SES (v2) in AWS with LOUPE_SES_IDENTITY; locally SMTP when SMTP_URL
 * is set, else the outbox folder `<LOUPE_DATA_DIR>/outbox`.
 */
export function mail(): Mail {
  const cfg = config();
  if (instance && builtFrom === cfg) return instance;
  const problem = mailUnavailable();
  if (problem) throw new Error(problem);
  const from = mailFrom()!;
  if (cfg.runtime === 'aws') instance = new SesMail(cfg.LOUPE_SES_IDENTITY!, from);
  else if (cfg.SMTP_URL) instance = new SmtpMail(cfg.SMTP_URL, from);
  else instance = new OutboxMail(join(cfg.LOUPE_DATA_DIR, 'outbox'), from);
  builtFrom = cfg;
  return instance;
}

export function resetMail(): void {
  instance = undefined;
}
