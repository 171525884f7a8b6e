import type { MiddlewareObj } from '@middy/core';
import { badRequest, payloadTooLarge } from '../../platform/errors';
import type { HttpRequest } from './state';

export const MAX_BODY_BYTES = 1024 * 1024;

/** Enforces the 1 MiB body limit and parses JSON (400 BAD_REQUEST when malformed). */
export function jsonBody(): MiddlewareObj {
  return {
    before: async (request) => {
      const req = request as unknown as HttpRequest;
      const raw = req.event.body;
      if (raw === null || raw === undefined || raw === '') {
        req.state.hasBody = false;
        return;
      }
      const buf = req.event.isBase64Encoded ? Buffer.from(raw, 'base64') : Buffer.from(raw, 'utf8');
      if (buf.byteLength > MAX_BODY_BYTES) throw payloadTooLarge();
      const text = buf.toString('utf8');
      if (text.trim() === '') {
        req.state.hasBody = false;
        return;
      }
      try {
        req.state.body = JSON.parse(text);
        req.state.hasBody = true;
      } catch (e) {
        throw badRequest('Request body is not valid JSON.', { parseError: (e as Error).message });
      }
    },
  };
}
