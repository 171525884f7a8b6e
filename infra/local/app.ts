import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import { envelope } from '../../shared/http/envelope';
import { groupFor } from '../../shared/http/groups';
import { config, resetConfig } from '../../shared/platform/config';
import { resetDocumentClient, setDocumentClientFactory } from '../../shared/platform/db/client';
import { resetEncryption } from '../../shared/platform/encryption';
import { bootstrapLocal } from './bootstrap';
import { lambdaContext, toProxyEvent, writeProxyResult } from './http-adapter';
import { type LocalService, startupTasks } from './startup';
import { startLocalStore, startStoreProcess } from './store';
import { storeDocumentClient } from './store-client';
import { installLambdaGlobals, invokeStreaming, isStreamingHandler } from './streaming';
import './demo';
import './outbound';
import './workers';
import { closeAllDrivers } from '../../shared/connections/drivers/index';

type ProxyHandler = (event: APIGatewayProxyEvent, context: Context) => Promise<APIGatewayProxyResult>;

export interface LocalApp {
  url: string;
  port: number;
  dataDir: string;
  orgId: string;
  adminUserId: string;
  /** Set when the bootstrap admin key was created on this start. */
  createdKey?: string;
  /** Handler instances in worker threads (0: the handlers run in this thread). */
  instances: number;
  /** CPU time of the instance threads so far (undefined when the handlers run in this thread). */
  instancesCpuUsage?(): { user: number; system: number };
  stop(): Promise<void>;
}

export interface LocalOptions {
  port?: number;
  dataDir?: string;
  /** Extra environment for this runtime (applied to process.env before configuration is read). */
  env?: Record<string, string | undefined>;
  log?: (line: string) => void;
  /**
   * Runs the store (dynalite) in a child process instead of this one (a crash of it then stops the
   * runtime). Off by default: on the 2-core machine it measured slower for the query path whenever
   * other work shares the cores (each store call then waits for the other process to be scheduled).
   */
  storeProcess?: boolean;
  /** Handler instances in worker threads; 0 runs the handlers in this thread. */
  instances?: number;
}

const STAGE = 'v1';
// The Lambda runtime's response-streaming globals, before any handler module is loaded.
installLambdaGlobals();
const handlers = new Map<string, Promise<ProxyHandler>>();

function handlerFor(name: string): Promise<ProxyHandler> {
  let h = handlers.get(name);
  if (!h) {
    h = import(`../../functions/http/${name}.ts`).then((m) => m.handler as ProxyHandler);
    handlers.set(name, h);
  }
  return h;
}

/**
 * The whole service on one machine: dynalite on disk, the same Lambda handlers invoked with API
 * Gateway REST proxy events, and the local queue, scheduler and startup tasks.
 */
export async function startLocal(opts: LocalOptions = {}): Promise<LocalApp> {
  for (const [k, v] of Object.entries(opts.env ?? {})) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  const dataDir = resolve(opts.dataDir ?? process.env.LOUPE_DATA_DIR ?? '.data');
  process.env.LOUPE_DATA_DIR = dataDir;
  process.env.LOUPE_RUNTIME = 'local';
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const log = opts.log ?? ((line: string) => console.log(line));

  resetConfig();
  resetDocumentClient();
  resetEncryption();
  const store = opts.storeProcess
    ? await startStoreProcess(dataDir, config().LOUPE_TABLE_NAME, {
        onCrash: (reason) => {
          console.error(reason);
          log(reason);
          process.exit(1);
        },
      })
    : await startLocalStore(dataDir, config().LOUPE_TABLE_NAME);
  process.env.LOUPE_DYNAMODB_ENDPOINT = store.endpoint;
  resetConfig();
  // This thread's store calls go straight into the store (no HTTP, no SDK serialization) when it runs here.
  const call = store.call;
  setDocumentClientFactory(call ? () => storeDocumentClient(call) : undefined);

  const boot = await bootstrapLocal(dataDir, process.env.LOUPE_ADMIN_KEY || undefined);
  const services: LocalService[] = [];
  for (const task of startupTasks) {
    const s = await task({
      dataDir,
      orgId: boot.orgId,
      adminUserId: boot.adminUserId,
      firstStart: boot.firstStart,
      log,
    });
    if (s) services.push(s);
  }

  const server: Server = createServer((req, res) => {
    serve(req, res, log).catch((e) => {
      log(`local runtime error: ${(e as Error).message}`);
      if (!res.headersSent) res.writeHead(500, { 'Content-Type': 'application/json' });
      res.end();
    });
  });
  server.keepAliveTimeout = 5000;
  await new Promise<void>((ok, fail) => {
    server.once('error', fail);
    server.listen(opts.port ?? 3000, '127.0.0.1', () => ok());
  });
  const port = (server.address() as AddressInfo).port;

  return {
    url: `http://localhost:${port}/${STAGE}`,
    port,
    dataDir,
    orgId: boot.orgId,
    adminUserId: boot.adminUserId,
    createdKey: boot.createdKey,
    instances: 0,
    async stop() {
      await new Promise<void>((ok) => {
        server.close(() => ok());
        server.closeAllConnections();
      });
      for (const s of services.reverse()) await s.stop();
      await closeAllDrivers(); // database pools and SQLite processes (a runaway statement is killed)
      setDocumentClientFactory(undefined);
      await store.close();
    },
  };
}

async function serve(req: IncomingMessage, res: ServerResponse, log: (line: string) => void) {
  const started = performance.now();
  const url = new URL(req.url ?? '/', 'http://local');
  let path: string;
  if (url.pathname === `/${STAGE}` || url.pathname.startsWith(`/${STAGE}/`))
    path = url.pathname.slice(STAGE.length + 1) || '/';
  else if (url.pathname.startsWith('/.well-known/')) path = url.pathname;
  else {
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
  const event = await toProxyEvent(req, path, STAGE);
  const handler = await handlerFor(group.name);
  if (isStreamingHandler(handler)) {
    const status = await invokeStreaming(handler, event, lambdaContext(`loupe-${group.name}`), res);
    const took = (performance.now() - started).toFixed(1);
    log(`${req.method} ${url.pathname} ${status} ${took}ms ${group.name} (streamed)`);
    return;
  }
  const result = await handler(event, lambdaContext(`loupe-${group.name}`));
  writeProxyResult(res, result);
  const ms = (performance.now() - started).toFixed(1);
  log(`${req.method} ${url.pathname} ${result.statusCode} ${ms}ms ${group.name}`);
}
