import { randomUUID } from 'node:crypto';
import type { MiddlewareObj } from '@middy/core';
import { config } from '../../platform/config';
import { logger } from '../../platform/logger';
import { type HttpRequest, headerOf, rememberRequest } from './state';

/** Assigns the request id, start time, client IP and public base URL. */
export function requestContext(): MiddlewareObj {
  return {
    before: async (request) => {
      const req = request as unknown as HttpRequest;
      const e = req.event;
      const stage = e.requestContext?.stage ?? 'v1';
      const host = headerOf(e, 'host') ?? e.requestContext?.domainName ?? 'localhost';
      const proto = headerOf(e, 'x-forwarded-proto') ?? 'https';
      const base = config().LOUPE_PUBLIC_URL ?? `${proto}://${host}/${stage}`;
      req.state = {
        requestId: randomUUID(),
        startedAt: Date.now(),
        headers: {},
        baseUrl: base.replace(/\/$/, ''),
        sourceIp: e.requestContext?.identity?.sourceIp ?? 'unknown',
      };
      rememberRequest(req);
      logger().appendKeys({ requestId: req.state.requestId });
    },
  };
}
