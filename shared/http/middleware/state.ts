import type { MiddyfiedHandler } from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import type { AuthContext } from '../../auth/context';
import type { Route } from '../route';

/** Per-request state the middlewares share (each middleware owns the fields it sets). */
export interface RequestState {
  requestId: string;
  startedAt: number;
  headers: Record<string, string>;
  route?: Route;
  rawParams?: Record<string, string>;
  body?: unknown;
  hasBody?: boolean;
  ctx?: AuthContext;
  /** The organization rate-limit count started by auth once the key is known (awaited by orgRateLimit). */
  orgLimit?: { orgId: string; count: Promise<Record<string, string>> };
  validated?: { params: unknown; query: unknown; body: unknown };
  baseUrl: string;
  sourceIp: string;
}

export interface HttpRequest {
  event: APIGatewayProxyEvent;
  context: Context;
  response: APIGatewayProxyResult | null;
  error: unknown;
  internal: Record<string, unknown>;
  state: RequestState;
}

export type HttpHandler = MiddyfiedHandler<APIGatewayProxyEvent, APIGatewayProxyResult, Error, Context>;

export function headerOf(event: APIGatewayProxyEvent, name: string): string | undefined {
  const lower = name.toLowerCase();
  for (const [k, v] of Object.entries(event.headers ?? {}))
    if (k.toLowerCase() === lower) return v ?? undefined;
  return undefined;
}

const requests = new WeakMap<object, HttpRequest>();

/** The middy request of an event, for the final handler (middy passes it only the event). */
export const requestOf = (event: object): HttpRequest => requests.get(event)!;
export const rememberRequest = (req: HttpRequest): void => {
  requests.set(req.event, req);
};
