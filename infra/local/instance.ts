import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type MessagePort, parentPort } from 'node:worker_threads';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import { closeAllDrivers } from '../../shared/databases/drivers/index';
import { envelope } from '../../shared/http/envelope';
import { groupFor } from '../../shared/http/groups';
import { settled } from '../../shared/platform/after-answer';
import { config, resetConfig } from '../../shared/platform/config';
import { setStoreCall } from '../../shared/platform/db/client';
import { withInvocationLogger } from '../../shared/platform/logger';
import { count, localRegistry, observe } from '../../shared/platform/measures';
import type { Snapshot } from '../../shared/platform/measures/registry';
import { localQueueSignals } from '../../shared/platform/queue/local';
import { localSchedulerSignals } from '../../shared/platform/scheduler/local';
import { serveConsole } from './console';
import { lambdaContext, toProxyEvent, writeProxyResult } from './http-adapter';
import { METRICS_PATH, type SnapshotSource, serveMetrics, thisThread } from './metrics-endpoint';
import { serveReference } from './reference-page';
import { portStoreCall } from './store-client';
import { installLambdaGlobals, invokeStreaming, isStreamingHandler } from './streaming';

/**
 * One handler instance: what a warm Lambda instance of each HTTP function is, locally. It loads the
 * function modules on first use (each with its own module-level caches), turns Node HTTP requests into
 * API Gateway proxy events and writes the answers. The local runtime runs several of them, one per
 * worker thread (`runInstance`, started by instances.ts), or one in its own thread (`instanceServer`).
 */
type ProxyHandler = (event: APIGatewayProxyEvent, context: Context) => Promise<APIGatewayProxyResult>;

export const STAGE = 'v1';
/** API Gateway's integration timeout for a buffered (non-streaming) answer. */
const GATEWAY_SECONDS = 29;

export function requestHandler(log: (line: string) => void, metrics: SnapshotSource = thisThread) {
  // The Lambda runtime's response-streaming globals, before any handler module is loaded.
  installLambdaGlobals();
  const handlers = new Map<string, Promise<ProxyHandler>>();
  const handlerFor = (name: string): Promise<ProxyHandler> => {
    let h = handlers.get(name);
    if (!h) {
      h = import(`../../functions/http/${name}.ts`).then((m) => m.handler as ProxyHandler);
      handlers.set(name, h);
    }
    return h;
  };

  async function serve(req: IncomingMessage, res: ServerResponse) {
    const started = performance.now();
    const url = new URL(req.url ?? '/', 'http://local');
    let path: string;
    if (url.pathname === METRICS_PATH) {
      log(`${req.method} ${url.pathname} ${await serveMetrics(req, res, metrics)}`);
      return;
    }
    if (url.pathname === `/${STAGE}` || url.pathname.startsWith(`/${STAGE}/`))
      path = url.pathname.slice(STAGE.length + 1) || '/';
    else if (url.pathname.startsWith('/.well-known/')) path = url.pathname;
    else if (req.method === 'GET' && (await serveReference(url.pathname, STAGE, res))) {
      log(`${req.method} ${url.pathname} 200`);
      return;
    } else if (serveConsole(req, res, url.pathname)) {
      log(`${req.method} ${url.pathname} ${res.statusCode} console`);
      return;
    } else {
      const body = JSON.stringify(
        envelope(randomUUID(), null, {
          code: 'NOT_FOUND',
          message: `Nothing is served at ${url.pathname}; the API is under /${STAGE}.`,
        }),
      );
      res.writeHead(404, { 'Content-Type': 'application/json' }).end(body);
      log(`${req.method} ${url.pathname} 404`);
      return;
    }
    const group = groupFor(path);
    const event = await toProxyEvent(req, path, STAGE, url);
    const handler = await handlerFor(group.name);
    // The invocation's real deadline from the request's arrival: the function's timeout and, for a
    // buffered answer, API Gateway's 29 s integration limit (what a deployed handler lives under).
    const timeoutMs =
      1000 * Math.min(group.timeoutSeconds ?? GATEWAY_SECONDS, group.streaming ? Infinity : GATEWAY_SECONDS);
    const context = lambdaContext(`loupe-${group.name}`, timeoutMs, event.requestContext.requestTimeEpoch);
    if (isStreamingHandler(handler)) {
      const status = await invokeStreaming(handler, event, context, res);
      measureRequest(group.name, status, started);
      const took = (performance.now() - started).toFixed(1);
      log(`${req.method} ${url.pathname} ${status} ${took}ms ${group.name} (streamed)`);
      return;
    }
    const result = await handler(event, context);
    writeProxyResult(res, result);
    measureRequest(group.name, result.statusCode, started);
    const ms = (performance.now() - started).toFixed(1);
    log(`${req.method} ${url.pathname} ${result.statusCode} ${ms}ms ${group.name}`);
  }

  // Answers under way, for a graceful stop: they finish, then their connections close.
  const inFlight = new Set<ServerResponse>();
  let draining = false;
  let drained: (() => void) | undefined;
  const handle = (req: IncomingMessage, res: ServerResponse) => {
    inFlight.add(res);
    if (draining) res.shouldKeepAlive = false;
    res.once('close', () => {
      inFlight.delete(res);
      if (inFlight.size === 0) drained?.();
    });
    // Each request logs with its own context (never another request's or a worker's).
    withInvocationLogger(undefined, () => serve(req, res)).catch((e) => {
      log(`local runtime error: ${(e as Error).message}`);
      if (!res.headersSent) res.writeHead(500, { 'Content-Type': 'application/json' });
      res.end();
    });
  };
  /**
   * Lets the answers under way finish (each then closes its connection), for at most `ms`; resolves with
   * how many were still unfinished at the bound.
   */
  handle.drain = async (ms: number): Promise<number> => {
    draining = true;
    for (const res of inFlight) if (!res.headersSent) res.shouldKeepAlive = false;
    if (inFlight.size === 0) return 0;
    let timer: NodeJS.Timeout | undefined;
    await new Promise<void>((ok) => {
      drained = ok;
      timer = setTimeout(ok, ms);
    });
    clearTimeout(timer);
    return inFlight.size;
  };
  return handle;
}

/** HttpRequests and HttpDuration (local only: API Gateway has its own in AWS). */
function measureRequest(group: string, status: number, started: number) {
  count('httpRequests', { group, code: String(status) });
  observe('httpDuration', performance.now() - started, { group });
}

/** An HTTP server of one instance, listening on `port` (with SO_REUSEPORT when several instances share it). */
export async function instanceServer(
  port: number,
  log: (line: string) => void,
  reusePort = false,
  metrics?: SnapshotSource,
): Promise<{ server: Server; port: number; close(): Promise<void> }> {
  const handle = requestHandler(log, metrics);
  const server = createServer(handle);
  server.keepAliveTimeout = 5000;
  await new Promise<void>((ok, fail) => {
    server.once('error', fail);
    server.listen({ port, host: '127.0.0.1', reusePort }, () => ok());
  });
  return {
    server,
    port: (server.address() as AddressInfo).port,
    // Graceful: stops accepting at once (idle keep-alive connections close), lets the requests under way
    // finish for up to LOUPE_DRAIN_MS (25 s), then closes what is left.
    async close() {
      const closed = new Promise<void>((ok) => server.close(() => ok()));
      const drainMs = config().LOUPE_DRAIN_MS;
      const cut = await handle.drain(drainMs);
      if (cut) log(`stopping: ${cut} request(s) still unfinished after ${drainMs / 1000} s were cut`);
      await settled(); // store writes the answered requests left under way (history outcomes, lastUsedAt)
      server.closeAllConnections();
      await closed;
    },
  };
}

/** What the main thread gives an instance thread (instances.ts). */
export interface InstanceData {
  index: number;
  port: number;
  store: MessagePort;
}

/** Messages from an instance thread to the main thread. */
export type InstanceMessage =
  | { type: 'ready'; port: number }
  | { type: 'snapshots-wanted'; id: number }
  | { type: 'snapshot'; id: number; snapshot: Snapshot }
  | { type: 'log'; line: string }
  | { type: 'queue-sent'; queue: string }
  | { type: 'schedules-changed' }
  | { type: 'stopped' };

/** Messages from the main thread to an instance thread (besides 'stop'). */
export type MainMessage =
  | { type: 'snapshot-wanted'; id: number }
  | { type: 'snapshots'; id: number; snapshots: Snapshot[] };

/**
 * The body of an instance thread: store calls go over `data.store` to the main thread's store; the
 * local queue's and scheduler's wake-up signals are forwarded to the main thread, where the workers run.
 */
export async function runInstance(data: InstanceData): Promise<void> {
  const port = parentPort;
  if (!port) throw new Error('runInstance runs in a worker thread started by instances.ts');
  const post = (m: InstanceMessage) => port.postMessage(m);
  resetConfig();
  const call = portStoreCall(data.store);
  setStoreCall(call);
  const onSent = (queue: string) => post({ type: 'queue-sent', queue });
  const onChanged = () => post({ type: 'schedules-changed' });
  localQueueSignals.on('sent', onSent);
  localSchedulerSignals.on('changed', onChanged);
  // GET /metrics asks the main thread for every thread's registry (snapshotsOf in instances.ts).
  const wanted = new Map<number, (s: Snapshot[]) => void>();
  let nextId = 0;
  const metrics: SnapshotSource = () =>
    new Promise((resolve) => {
      const id = ++nextId;
      wanted.set(id, resolve);
      post({ type: 'snapshots-wanted', id });
    });
  const server = await instanceServer(data.port, (line) => post({ type: 'log', line }), true, metrics);
  port.on('message', async (m: unknown) => {
    const msg = m as Partial<MainMessage> | undefined;
    if (msg?.type === 'snapshot-wanted') {
      post({ type: 'snapshot', id: msg.id!, snapshot: localRegistry().snapshot() });
      return;
    }
    if (msg?.type === 'snapshots') {
      wanted.get(msg.id!)?.(msg.snapshots!);
      wanted.delete(msg.id!);
      return;
    }
    if (m !== 'stop') return;
    await server.close();
    await closeAllDrivers(); // database pools and SQLite processes of this instance
    localQueueSignals.off('sent', onSent);
    localSchedulerSignals.off('changed', onChanged);
    setStoreCall(undefined);
    data.store.close();
    post({ type: 'stopped' });
    port.close(); // nothing is left: the thread ends on its own
  });
  post({ type: 'ready', port: server.port });
}
