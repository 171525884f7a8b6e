import type { APIGatewayProxyEvent } from 'aws-lambda';
import type { AuthContext } from '../auth/context';
import type { EndpointSpec, Infer } from './endpoint';
import type { Pagination } from './envelope';

/** What a route handler receives: validated parts of the request and the caller. */
export interface Req<S extends EndpointSpec = EndpointSpec> {
  params: Infer<S['params']>;
  query: Infer<S['query']>;
  body: Infer<S['body']>;
  /** The caller (absent only on `auth: 'none'` routes). */
  ctx: AuthContext;
  requestId: string;
  sourceIp: string;
  /** Public base URL of the API including the version segment, e.g. http://localhost:3000/v1 */
  baseUrl: string;
  headers: Record<string, string | undefined>;
  event: APIGatewayProxyEvent;
  /** Milliseconds left before the request's real deadline (the function's and API Gateway's). */
  remainingMs: () => number;
}

/** What a route handler returns; the stack wraps `data` in the envelope. */
export interface Reply {
  data?: unknown;
  status?: number;
  pagination?: Pagination;
  headers?: Record<string, string>;
  /** A non-envelope body (e.g. an SSE stream rendered in buffered mode). */
  raw?: { body: string; contentType: string };
}

export interface Route {
  spec: EndpointSpec;
  run: (req: Req<any>) => Promise<Reply>;
  pattern: RegExp;
  paramNames: string[];
}

export function compilePath(path: string): { pattern: RegExp; paramNames: string[] } {
  const paramNames: string[] = [];
  const src = path
    .split('/')
    .map((seg) => {
      const m = /^\{(\w+)\}$/.exec(seg);
      if (m) {
        paramNames.push(m[1]);
        return '([^/]+)';
      }
      return seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    })
    .join('/');
  return { pattern: new RegExp(`^${src}/?$`), paramNames };
}

/** Binds an endpoint spec to the code that serves it. */
export function on<S extends EndpointSpec<any, any, any>>(
  spec: S,
  run: (req: Req<S>) => Promise<Reply>,
): Route {
  return { spec, run: run as Route['run'], ...compilePath(spec.path) };
}
