import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { newId } from '../ids';
import { buildMime } from './mime';
import type { Mail, MailMessage, MailSent } from './port';

/** Local mail without a server: each message is written as `<dir>/<time>-<id>.eml` (open it in a mail client). */
export class OutboxMail implements Mail {
  readonly transport = 'OUTBOX' as const;
  constructor(
    private readonly dir: string,
    readonly from: string,
  ) {}

  async send(msg: MailMessage): Promise<MailSent> {
    const { raw, messageId } = await buildMime(this.from, msg);
    await mkdir(this.dir, { recursive: true });
    const name = `${new Date().toISOString().replace(/[:.]/g, '-')}-${newId()}.eml`;
    await writeFile(join(this.dir, name), raw, { mode: 0o600 });
    return { messageId, statusCode: null, response: `written to outbox ${name}`, rawBytes: raw.length };
  }
}
