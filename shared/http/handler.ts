import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import middy from '@middy/core';
import { logger } from '../platform/logger';
import { envelope } from './envelope';
import { auth } from './middleware/auth';
import { jsonBody } from './middleware/body';
import { errorEnvelope } from './middleware/errors';
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
export function httpHandler(routes: Route[]): HttpHandler {
  return middy()
    .use(injectLambdaContext(logger(), { resetKeys: true }))
    .use(requestContext())
    .use(errorEnvelope())
    .use(jsonBody())
    .use(router(routes))
    .use(discoveryRateLimit())
    .use(auth())
    .use(orgRateLimit())
    .use(validate())
    .handler(async (event) => dispatch(requestOf(event as object))) as unknown as HttpHandler;
}

async function dispatch(req: HttpRequest) {
  const { state } = req;
  const route = state.route!;
  const v = state.validated!;
  const reply = await route.run({
    params: v.params,
    query: v.query,
    body: v.body,
    ctx: state.ctx!,
    requestId: state.requestId,
    sourceIp: state.sourceIp,
    baseUrl: state.baseUrl,
    headers: req.event.headers ?? {},
    event: req.event,
  } as never);
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
