/** SQS limits, enforced by both queue implementations so that local runs fail where AWS would. */
export const MAX_DELAY_SECONDS = 900;
export const MAX_MESSAGE_BYTES = 256 * 1024;

/** Validates a send and returns the message body as JSON text. */
export function checkSend(body: unknown, opts: { delaySeconds?: number; dedupeId?: string }): string {
  const delay = opts.delaySeconds ?? 0;
  if (!Number.isInteger(delay) || delay < 0 || delay > MAX_DELAY_SECONDS)
    throw new RangeError(`delaySeconds must be an integer from 0 to ${MAX_DELAY_SECONDS}; got ${delay}.`);
  if (opts.dedupeId !== undefined && !/^[\x21-\x7e]{1,128}$/.test(opts.dedupeId))
    throw new RangeError('dedupeId must be 1 to 128 printable ASCII characters without spaces.');
  const text = JSON.stringify(body);
  if (text === undefined) throw new TypeError('A queue message body must be JSON-serializable.');
  if (Buffer.byteLength(text, 'utf8') > MAX_MESSAGE_BYTES)
    throw new RangeError(`A queue message body must be at most ${MAX_MESSAGE_BYTES} bytes of JSON.`);
  return text;
}
