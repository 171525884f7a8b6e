/** Sends mail: Amazon SES (SESv2) when deployed, SMTP (`SMTP_URL`) or the `.data/outbox` folder locally. */
export interface MailAttachment {
  filename: string;
  content: string;
  contentType: string;
}

export interface MailMessage {
  to: string[];
  cc: string[];
  subject: string;
  html: string;
  text: string;
  attachments: MailAttachment[];
}

export type MailTransport = 'SES' | 'SMTP' | 'OUTBOX';

export interface MailSent {
  /** The Message-ID header of the message. */
  messageId: string;
  /** SMTP reply code (250) for SMTP, 200 for SES, null for the outbox. */
  statusCode: number | null;
  /** What the transport answered: the SMTP reply line, the SES message id, or the outbox file name. */
  response: string;
  /** Size of the MIME message sent. */
  rawBytes: number;
}

/** The failure of a send, with the SMTP reply code or SES HTTP status when the server answered. */
export class MailFailed extends Error {
  constructor(
    message: string,
    readonly statusCode: number | null,
    readonly rawBytes: number,
  ) {
    super(message);
    this.name = 'MailFailed';
  }
}

export interface Mail {
  readonly transport: MailTransport;
  /** The From address used for every message. */
  readonly from: string;
  /** Sends one message; `timeoutMs` bounds the whole exchange. Throws MailFailed. */
  send(msg: MailMessage, opts?: { timeoutMs?: number }): Promise<MailSent>;
}
