import nodemailer from 'nodemailer';
import { buildMime } from './mime';
import { type Mail, MailFailed, type MailMessage, type MailSent } from './port';

/** SMTP through nodemailer (`SMTP_URL`, e.g. `smtp://user:pass@host:587` or `smtps://host:465`). */
export class SmtpMail implements Mail {
  readonly transport = 'SMTP' as const;
  constructor(
    private readonly url: string,
    readonly from: string,
  ) {}

  async send(msg: MailMessage, opts: { timeoutMs?: number } = {}): Promise<MailSent> {
    const { raw, messageId } = await buildMime(this.from, msg);
    const t = opts.timeoutMs ?? 30_000;
    const transport = nodemailer.createTransport(this.url, {
      connectionTimeout: t,
      greetingTimeout: t,
      socketTimeout: t,
      dnsTimeout: t,
    } as never);
    try {
      const info = await transport.sendMail({
        envelope: { from: this.from, to: [...msg.to, ...msg.cc] },
        raw,
      });
      const response = String((info as { response?: unknown }).response ?? '');
      const code = Number.parseInt(response.slice(0, 3), 10);
      return { messageId, statusCode: Number.isFinite(code) ? code : null, response, rawBytes: raw.length };
    } catch (e) {
      const err = e as { responseCode?: number; message?: string; code?: string };
      throw new MailFailed(
        `SMTP send failed: ${err.message ?? String(e)}`.replace(/smtps?:\/\/[^\s]*/gi, 'smtp://…'),
        typeof err.responseCode === 'number' ? err.responseCode : null,
        raw.length,
      );
    } finally {
      transport.close();
    }
  }
}
