import { randomUUID } from 'node:crypto';
import type { MiddlewareObj } from '@middy/core';
import { config } from '../../platform/config';
import { appendLogKeys } from '../../platform/logger';
import { type HttpRequest, headerOf, rememberRequest } from './state';

const HOST =
  /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?|\[[0-9A-Fa-f:.]{2,45}\])(?::\d{1,5})?$/;

/** A host name, IPv4 address or bracketed IPv6 address with an optional port; anything else is undefined. */
export function validHost(value: string | undefined | null): string | undefined {
  if (!value || value.length > 260) return undefined;
  return HOST.test(value) ? value : undefined;
}

/** Headers on every API answer (also the error envelope). */
export const SECURITY_HEADERS = { 'X-Content-Type-Options': 'nosniff' } as const;

/** Assigns the request id, start time, client IP and public base URL. */
export function requestContext(): MiddlewareObj {
  return {
    before: async (request) => {
      const req = request as unknown as HttpRequest;
      const e = req.event;
      const stage = e.requestContext?.stage ?? 'v1';
      // The Host and X-Forwarded-Proto headers are client input: used only when they are a plain host[:port]
      // and http/https (they end up in WWW-Authenticate and in GET / links), else the gateway's own domain.
      const host = validHost(headerOf(e, 'host')) ?? validHost(e.requestContext?.domainName) ?? 'localhost';
      const proto =
        (headerOf(e, 'x-forwarded-proto') ?? '').split(',')[0].trim().toLowerCase() === 'http'
          ? 'http'
          : 'https';
      const base =
        config().LOUPE_PUBLIC_URL ?? `${proto}://${host}/${/^[\w-]{1,64}$/.test(stage) ? stage : 'v1'}`;
      req.state = {
        requestId: randomUUID(),
        startedAt: Date.now(),
        // Every answer (JSON, errors, MCP, streams): browsers must not read an answer as another type.
        headers: { ...SECURITY_HEADERS },
        baseUrl: base.replace(/\/$/, ''),
        sourceIp: e.requestContext?.identity?.sourceIp ?? 'unknown',
      };
      rememberRequest(req);
      appendLogKeys({ requestId: req.state.requestId });
    },
  };
}
