import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type LocalApp, startLocal } from '../../infra/local/app';
import { generateKey } from '../../shared/auth/key-material';

export interface ApiAnswer<T = any> {
  status: number;
  headers: Headers;
  body: { data: T; error: any; meta: any };
  text: string;
}

export interface TestServer {
  app: LocalApp;
  url: string;
  adminKey: string;
  dataDir: string;
  /** The lines the runtime logged at start and since (announcements, the admin key notice). */
  logs: string[];
  /** Calls the API: `call('POST', '/keys', { body, key })`; the admin key unless `key` is given (null: none). */
  call<T = any>(
    method: string,
    path: string,
    opts?: { body?: unknown; rawBody?: string; key?: string | null; headers?: Record<string, string> },
  ): Promise<ApiAnswer<T>>;
  /** Stops the server; `keepData` leaves the data directory for a restart. */
  stop(opts?: { keepData?: boolean }): Promise<void>;
}

/**
 * Starts the real local runtime (dynalite on disk, the Lambda handlers behind a real HTTP server) on
 * a free port with a fresh data directory, unless `dataDir` names an existing one. The runtime
 * configures the process (like a Lambda instance), so run one server at a time per test file; use
 * `createOrganization` for more tenants.
 */
export async function startTestServer(
  opts: { dataDir?: string; adminKey?: string; env?: Record<string, string | undefined> } = {},
): Promise<TestServer> {
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'loupe-test-'));
  const adminKey = opts.adminKey ?? generateKey();
  const logs: string[] = [];
  const app = await startLocal({
    port: 0,
    dataDir,
    // One handler instance in this thread: tests read and reset module-level state of the handlers'
    // modules (configuration, drivers, the store client) in their own process, and per-instance caches
    // would make answers depend on which instance took a connection. Several instances (worker threads,
    // as `npm start` runs) are covered by test/integration/local-instances.test.ts.
    instances: 0,
    env: { LOUPE_ADMIN_KEY: adminKey, LOUPE_LOG_LEVEL: 'SILENT', ...(opts.env ?? {}) },
    log: (l) => logs.push(l),
  });
  const server: TestServer = {
    app,
    url: app.url,
    adminKey,
    dataDir,
    logs,
    async call(method, path, o = {}) {
      const headers: Record<string, string> = { ...(o.headers ?? {}) };
      const key = o.key === undefined ? adminKey : o.key;
      if (key) headers.authorization = `Bearer ${key}`;
      let body: string | undefined = o.rawBody;
      if (o.body !== undefined) {
        body = JSON.stringify(o.body);
        headers['content-type'] = 'application/json';
      }
      const res = await fetch(`${app.url}${path}`, { method, headers, body });
      const text = await res.text();
      let parsed: any;
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = undefined;
      }
      if (process.env.LOUPE_RECORD_ANSWERS)
        appendFileSync(
          process.env.LOUPE_RECORD_ANSWERS,
          `${JSON.stringify({ method, path, request: o.body, status: res.status, body: parsed })}\n`,
        );
      return { status: res.status, headers: res.headers, body: parsed, text };
    },
    async stop(s = {}) {
      await app.stop();
      if (!s.keepData && !opts.dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return server;
}
