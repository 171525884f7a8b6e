import middy from '@middy/core';
import { AppError } from '../platform/errors';
import { envelope } from './envelope';
import { auth } from './middleware/auth';
import { jsonBody } from './middleware/body';
import { errorEnvelope } from './middleware/errors';
import { lambdaContext } from './middleware/log-context';
import { discoveryRateLimit, orgRateLimit } from './middleware/rate-limit';
import { requestContext } from './middleware/request-context';
import { router } from './middleware/router';
import { type HttpHandler, type HttpRequest, requestOf } from './middleware/state';
import { validate } from './middleware/validate';
import type { Route } from './route';

/**
 * The one middy stack every HTTP function uses:
 * request context → error envelope → body limit + JSON → route match → discovery rate limit →
 * authentication → organization rate limit
 * → validation → the route's use case → envelope.
 */
export function httpHandler(routes: Route[], opts: { streaming?: boolean } = {}): HttpHandler {
  // Middy's own early timeout reads only the function's remaining time (360 s for workflows), not API
  // Gateway's 29 s; `dispatch` keeps the request's real deadline instead.
  return middy({ timeoutEarlyInMillis: 0 })
    .use(lambdaContext())
    .use(requestContext())
    .use(errorEnvelope())
    .use(jsonBody())
    .use(router(routes))
    .use(discoveryRateLimit())
    .use(auth())
    .use(orgRateLimit())
    .use(validate())
    .handler(async (event) =>
      dispatch(requestOf(event as object), !!opts.streaming),
    ) as unknown as HttpHandler;
}

/** API Gateway's integration timeout for a buffered (non-streaming) answer. */
export const GATEWAY_LIMIT_MS = 29_000;
/** A route still running this close to its deadline is answered 504 REQUEST_TIMEOUT (never a bare cut). */
export const DEADLINE_MARGIN_MS = 1000;

/**
 * Milliseconds left to answer this request: the function's remaining time and, for a buffered answer,
 * API Gateway's 29 s from the request's arrival (the deployed function may run longer than the gateway
 * waits). Locally the adapter gives the same real deadline.
 */
export function remainingTime(req: Pick<HttpRequest, 'event' | 'context' | 'state'>, streaming: boolean) {
  const arrived = req.event.requestContext?.requestTimeEpoch || req.state.startedAt;
  return () => {
    const fn = req.context?.getRemainingTimeInMillis?.() ?? Number.POSITIVE_INFINITY;
    const gateway = streaming ? Number.POSITIVE_INFINITY : arrived + GATEWAY_LIMIT_MS - Date.now();
    return Math.max(0, Math.min(fn, gateway));
  };
}

const requestTimeout = () =>
  new AppError(
    504,
    'REQUEST_TIMEOUT',
    'The request did not finish within its time limit; what it started may still complete (check its state before retrying).',
  );

/** Resolves the route's reply, or rejects with 504 REQUEST_TIMEOUT just before the request's deadline. */
async function beforeDeadline<T>(work: Promise<T>, remainingMs: () => number): Promise<T> {
  const left = remainingMs() - DEADLINE_MARGIN_MS;
  if (!Number.isFinite(left)) return work;
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      work,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(requestTimeout()), Math.max(0, left));
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

async function dispatch(req: HttpRequest, streaming: boolean) {
  const { state } = req;
  const route = state.route!;
  const v = state.validated!;
  const remainingMs = remainingTime(req, streaming);
  const running = route.run({
    params: v.params,
    query: v.query,
    body: v.body,
    ctx: state.ctx!,
    requestId: state.requestId,
    sourceIp: state.sourceIp,
    baseUrl: state.baseUrl,
    headers: req.event.headers ?? {},
    event: req.event,
    remainingMs,
  } as never);
  running.catch(() => undefined); // a route cut at the deadline may still fail later: nobody waits for it
  const reply = await beforeDeadline(running, remainingMs);
  const headers = { ...state.headers, ...(reply.headers ?? {}) };
  if (reply.raw)
    return {
      statusCode: reply.status ?? 200,
      headers: { 'Content-Type': reply.raw.contentType, ...headers },
      body: reply.raw.body,
    };
  return {
    statusCode: reply.status ?? route.spec.status ?? 200,
    headers: { 'Content-Type': 'application/json', ...headers },
    body: JSON.stringify(envelope(state.requestId, reply.data, null, reply.pagination)),
  };
}
