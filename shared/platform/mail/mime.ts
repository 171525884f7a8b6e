import nodemailer from 'nodemailer';
import type { MailMessage } from './port';

const composer = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'windows' });

/**
 * Builds the RFC 5322 MIME message (multipart/alternative text + HTML, attachments) with nodemailer's
 * composer. Every transport sends these exact bytes, so the outbox, SMTP and SES carry the same message.
 */
export async function buildMime(from: string, msg: MailMessage): Promise<{ raw: Buffer; messageId: string }> {
  const info = await composer.sendMail({
    from,
    to: msg.to,
    cc: msg.cc.length ? msg.cc : undefined,
    subject: msg.subject,
    text: msg.text,
    html: msg.html,
    attachments: msg.attachments.map((a) => ({
      filename: a.filename,
      content: a.content,
      contentType: a.contentType,
    })),
    disableFileAccess: true,
    disableUrlAccess: true,
  });
  return { raw: info.message as Buffer, messageId: info.messageId };
}
