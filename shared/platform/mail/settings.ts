import { config } from '../config';

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
