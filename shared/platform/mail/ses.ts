import type { SESv2Client } from '@aws-sdk/client-sesv2';
import { buildMime } from './mime';
import { type Mail, MailFailed, type MailMessage, type MailSent } from './port';

/** The SES v2 client library, imported on first use. */
const sesSdk = () => import('@aws-sdk/client-sesv2');

/**
 * Amazon SES (SESv2 SendEmail with the raw MIME message, so attachments go as built). `identity` is
 * the verified SES identity (an address, a domain or an identity ARN) the IAM policy is scoped to.
 */
export class SesMail implements Mail {
  readonly transport = 'SES' as const;
  constructor(
    private readonly identity: string,
    readonly from: string,
    private client?: SESv2Client,
  ) {}

  async send(msg: MailMessage, opts: { timeoutMs?: number } = {}): Promise<MailSent> {
    const sdk = await sesSdk();
    this.client ??= new sdk.SESv2Client({});
    const { raw, messageId } = await buildMime(this.from, msg);
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), opts.timeoutMs ?? 30_000);
    try {
      const out = await this.client.send(
        new sdk.SendEmailCommand({
          FromEmailAddress: this.from,
          ...(this.identity.startsWith('arn:') ? { FromEmailAddressIdentityArn: this.identity } : {}),
          Destination: { ToAddresses: msg.to, CcAddresses: msg.cc.length ? msg.cc : undefined },
          Content: { Raw: { Data: raw } },
        }),
        { abortSignal: abort.signal },
      );
      return {
        messageId,
        statusCode: out.$metadata?.httpStatusCode ?? 200,
        response: `SES message ${out.MessageId ?? '(no id)'}`,
        rawBytes: raw.length,
      };
    } catch (e) {
      const err = e as { name?: string; message?: string; $metadata?: { httpStatusCode?: number } };
      throw new MailFailed(
        `SES send failed: ${err.name ?? 'Error'}: ${err.message ?? String(e)}`,
        err.$metadata?.httpStatusCode ?? null,
        raw.length,
      );
    } finally {
      clearTimeout(timer);
    }
  }
}
