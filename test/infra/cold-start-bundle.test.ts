import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { bundleFunction, NODE_FLAGS } from '../../infra/bundling';
import { functionEntries, ROOT } from '../../infra/functions';
import { createOrganization } from '../../shared/auth/bootstrap';
import { buildListings } from '../../shared/mcp/call';
import { config } from '../../shared/platform/config';
import { useTestStore } from '../support/store';

useTestStore('cold-start-bundle');
const work = mkdtempSync(join(tmpdir(), 'loupe-cold-start-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/**
 * Runs a copied function bundle as the cold-start bench does (bench/cold-start-child.mjs: a fresh
 * process imports it and answers one API Gateway request) and returns the answer's status and the
 * internal modules Node loaded by then.
 */
async function coldStart(bundle: string, path: string, key: string, extraEnv: Record<string, string> = {}) {
  const loaded = join(work, 'loaded.json');
  rmSync(loaded, { force: true });
  // Written when the child exits (it calls process.exit after answering).
  const preloadFile = join(work, 'preload.cjs');
  writeFileSync(
    preloadFile,
    `process.on('exit', () => require('node:fs').writeFileSync(${JSON.stringify(loaded)}, JSON.stringify(process.moduleLoadList)));`,
  );
  // Asynchronously: the store (dynalite) answers from this process.
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [...NODE_FLAGS, '--require', preloadFile, join(ROOT, 'bench', 'cold-start-child.mjs')],
    {
      cwd: work,
      encoding: 'utf8',
      timeout: 60_000,
      env: {
        PATH: process.env.PATH ?? '',
        LOUPE_RUNTIME: 'local',
        LOUPE_TABLE_NAME: config().LOUPE_TABLE_NAME,
        LOUPE_DYNAMODB_ENDPOINT: config().LOUPE_DYNAMODB_ENDPOINT ?? '',
        LOUPE_DATA_DIR: work,
        LOUPE_LOG_LEVEL: 'ERROR',
        AWS_REGION: 'local',
        BENCH_BUNDLE: pathToFileURL(bundle).href,
        BENCH_PATH: path,
        BENCH_KEY: key,
        ...extraEnv,
      },
    },
  );
  const out: { status: number; body?: string } = JSON.parse(stdout.trim().split('\n').pop()!);
  return {
    status: out.status,
    body: out.body,
    modules: JSON.parse(readFileSync(loaded, 'utf8')) as string[],
  };
}

describe('a function bundle at cold start', () => {
  it('answers its first request (a store read over plain HTTP) without loading undici', async () => {
    const fn = functionEntries().find((f) => f.kind === 'http' && f.name === 'workflows')!;
    const r = await bundleFunction(fn, join(work, 'build'));
    // Copied out of the repository, as Lambda sees it: no node_modules to fall back on.
    const dir = join(work, 'workflows');
    cpSync(r.dir, dir, { recursive: true });
    const { key } = await createOrganization({ name: 'Cold start', adminEmail: 'cold@example.com' });

    const { status, modules } = await coldStart(join(dir, 'index.mjs'), '/workflows', key);
    // 200 with the admin key: the key was looked up and the workflows read in the local store, through
    // the service's DynamoDB client over plain HTTP…
    expect(status).toBe(200);
    expect(modules).toContain('NativeModule http');
    // …which loads node:http with import(). Through Node's ESM facade that reads every export of
    // node:http, and its lazy WebSocket getter loads undici (25–30 ms of CPU); infra/bundling.ts gives
    // such imports the require()d module instead.
    expect(modules.filter((m) => /undici/.test(m))).toEqual([]);
    // The SDK looked for its shared config files (absent here) through node:fs, not node:fs/promises, which
    // loads the readline internals with it (infra/bundling.ts, lazyIniReadFile).
    expect(modules.filter((m) => /fs\/promises|readline/.test(m))).toEqual([]);
    // Middy's check of a streamed reply loads node:stream/web when it runs, not at start (lazyMiddyWebStream).
    expect(modules).not.toContain('NativeModule stream/web');
    // Nothing outbound was sent: TLS (node:https, loaded by shared/outbound with its first request)
    // and the scheduler's implementations stay out of a read.
    expect(modules.filter((m) => /NativeModule (https|tls|_tls_wrap)$/.test(m))).toEqual([]);
  }, 120_000);

  it('MCP: answers tools/list with the listing computed while bundling, equal to the source, without Ajv', async () => {
    const fn = functionEntries().find((f) => f.kind === 'http' && f.name === 'mcp')!;
    const r = await bundleFunction(fn, join(work, 'build'));
    const dir = join(work, 'mcp');
    cpSync(r.dir, dir, { recursive: true });
    const bundled = readdirSync(join(dir, 'chunks'))
      .filter((f) => f.endsWith('.mjs'))
      .map((f) => readFileSync(join(dir, 'chunks', f), 'utf8'));
    // The listing is data in the bundle (shared/mcp/listing.ts replaced), and Ajv is left out.
    expect(bundled.some((c) => c.includes('readOnlyHint:!0'))).toBe(true);
    // (`strictTuples` is one of Ajv's option names, kept by minification.)
    expect(bundled.filter((c) => c.includes('strictTuples'))).toEqual([]);
    const { key } = await createOrganization({ name: 'Cold MCP', adminEmail: 'cold-mcp@example.com' });
    const { status, body } = await coldStart(join(dir, 'index.mjs'), '/mcp', key, {
      BENCH_METHOD: 'POST',
      BENCH_BODY: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      BENCH_HEADERS: JSON.stringify({
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2025-11-25',
      }),
      BENCH_ECHO: '1',
    });
    expect(status, body).toBe(200);
    expect(JSON.parse(body!).result.tools).toEqual(buildListings());
  }, 120_000);
});
