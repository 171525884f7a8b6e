import middy, { type MiddlewareObj } from '@middy/core';
import { auth } from '../http/middleware/auth';
import { MAX_BODY_BYTES } from '../http/middleware/body';
import { errorEnvelope } from '../http/middleware/errors';
import { lambdaContext } from '../http/middleware/log-context';
import { requestContext } from '../http/middleware/request-context';
import { router } from '../http/middleware/router';
import { type HttpHandler, type HttpRequest, requestOf } from '../http/middleware/state';
import { hitSharedLimit } from '../http/rate-limit';
import { on } from '../http/route';
import { config } from '../platform/config';
import { type AppError, isAppError, payloadTooLarge } from '../platform/errors';
import { mcpEndpoint } from './api';

/**
 * The SDK (its server, transport and schemas) and the tools load with the first POST, alongside its
 * authentication when it has a body; a GET or DELETE (405) never loads them.
 */
let transportModule: Promise<typeof import('./transport')> | undefined;
const transport = () => (transportModule ??= import('./transport'));

const route = on(mcpEndpoint, async () => ({}));

/** The body as text, refused past 1 MiB (413) like every REST body; kept unparsed for the SDK. */
function bodyText(): MiddlewareObj {
  return {
    before: async (request) => {
      const req = request as unknown as HttpRequest;
      const raw = req.event.body;
      if (raw === null || raw === undefined) return;
      // The SDK loads while the key is looked up (module evaluation overlaps the store round trip);
      // a failed load surfaces when the exchange awaits it.
      transport().catch(() => {});
      const buf = req.event.isBase64Encoded ? Buffer.from(raw, 'base64') : Buffer.from(raw, 'utf8');
      if (buf.byteLength > MAX_BODY_BYTES) throw payloadTooLarge();
      req.state.body = buf.toString('utf8');
      req.state.hasBody = true;
    },
  };
}

const isToolCall = (m: unknown) =>
  !!m && typeof m === 'object' && (m as { method?: unknown }).method === 'tools/call';

/** More than the SDK accepts in one batch (it refuses those): counting stops there. */
const MAX_COUNTED = 101;

/**
 * POST /mcp. The REST stack's request context, error envelope, routing (405 for GET and DELETE), body
 * limit and authentication (the same key lookup: a missing or bad key is 401 with the RFC 9728
 * challenge), then the MCP exchange with the caller's context. Each JSON-RPC message counts once against
 * the organization's rate limit, like a REST request: over it, tools/call messages answer RATE_LIMITED
 * tool results (with the retry time) and anything else the REST 429.
 */
export function mcpHandler(): HttpHandler {
  return middy()
    .use(lambdaContext())
    .use(requestContext())
    .use(errorEnvelope())
    .use(router([route]))
    .use(bodyText())
    .use(auth())
    .handler(async (event) => serve(requestOf(event as object))) as unknown as HttpHandler;
}

async function serve(req: HttpRequest) {
  const { state } = req;
  const ctx = state.ctx!;
  const text = state.hasBody ? (state.body as string) : undefined;
  let parsed: unknown;
  try {
    parsed = text === undefined ? undefined : JSON.parse(text);
  } catch {
    parsed = undefined; // the SDK answers the JSON-RPC parse error
  }
  // A batch (JSON-RPC array, up to 100 messages) counts once per message, as that many REST requests would.
  const messages = Array.isArray(parsed) ? parsed : [parsed];
  let limited: AppError | undefined;
  try {
    const limit = config().LOUPE_ORG_RATE_LIMIT;
    const count =
      state.orgLimit?.orgId === ctx.orgId ? state.orgLimit.count : hitSharedLimit(ctx.orgId, 'all', limit);
    Object.assign(state.headers, await count);
    for (let i = 1; i < Math.min(messages.length, MAX_COUNTED); i++)
      Object.assign(state.headers, await hitSharedLimit(ctx.orgId, 'all', limit));
  } catch (e) {
    if (!isAppError(e) || e.code !== 'RATE_LIMITED' || !messages.every(isToolCall)) throw e;
    limited = e;
    Object.assign(state.headers, e.headers ?? {});
  }
  const { exchange } = await transport();
  const answer = await exchange({
    url: `${state.baseUrl}${mcpEndpoint.path}`,
    method: req.event.httpMethod.toUpperCase(),
    headers: req.event.headers ?? {},
    body: text,
    parsed,
    ctx,
    limited,
  });
  return {
    statusCode: answer.status,
    headers: { ...state.headers, ...answer.headers },
    body: answer.body,
  };
}
