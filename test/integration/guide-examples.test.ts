import { execFile } from 'node:child_process';
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { CONSOLE_DIR } from '../../infra/local/console';
import { createOrganization } from '../../shared/auth/bootstrap';
import { createPostgresDatabase, postgresAdmin } from '../support/connections';
import { type FakeOpenAI, type RecordedRequest, startFakeOpenAI } from '../support/fake-openai';
import { startTestServer, type TestServer } from '../support/server';

/**
 * Every guide's examples (docs/guides/*.md), run as written, as the README tour is (readme-tour.test.ts).
 * Each guide gets an organization of its own on one local runtime (demo data, the test model server as
 * the provider, LOUPE_DEV_ALLOW_LOOPBACK_HTTP on) and runs in a folder whose `.data/admin-key` is that
 * organization's key. Before its blocks come the README tour's helpers (`$LOUPE`, `$KEY`, `api`, `pick`,
 * the receiver on `$HOOK_PORT`) and the tour's first step (`$CONN`, a writable demo copy); then its `sh`
 * blocks run in order in one bash process under `set -eu -o pipefail`.
 *
 * Checked: the script succeeds; no API call answers 5xx; each block's non-2xx answers are exactly those
 * its comments announce (a comment starting with the status, `# 403: your own submission`); and what a
 * guide says happened did (below). A block is left out only with a marker just above it saying why:
 * `<!-- example: skip (reason) -->`; `<!-- example: mcp-config -->` marks a JSON client configuration,
 * which is launched as a client would; `<!-- example: inspector -->` blocks fetch the MCP Inspector
 * from the npm registry and run only with LOUPE_TEST_INSPECTOR=1.
 */
const root = join(import.meta.dirname, '..', '..');
const guidesDir = join(root, 'docs', 'guides');
const GUIDES = readdirSync(guidesDir)
  .filter((f) => f.endsWith('.md'))
  .sort();
const INSPECTOR = process.env.LOUPE_TEST_INSPECTOR === '1';

interface Block {
  lang: string;
  code: string;
  /** `<!-- example: kind (reason) -->` just above the fence. */
  marker?: { kind: string; reason: string };
  line: number;
}

function blocksOf(markdown: string): Block[] {
  const lines = markdown.split('\n');
  const out: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\w*)\s*$/.exec(lines[i]);
    if (!open) continue;
    let end = i + 1;
    while (end < lines.length && !/^```\s*$/.test(lines[end])) end++;
    let before = i - 1;
    while (before >= 0 && !lines[before].trim()) before--;
    const m = /^<!-- example: ([\w-]+)(?: \((.+)\))? -->$/.exec(lines[before] ?? '');
    out.push({
      lang: open[1],
      code: lines.slice(i + 1, end).join('\n'),
      marker: m ? { kind: m[1], reason: m[2] ?? '' } : undefined,
      line: i + 1,
    });
    i = end;
  }
  return out;
}

const guide = (name: string) => blocksOf(readFileSync(join(guidesDir, name), 'utf8'));
const runnable = (b: Block) => b.lang === 'sh' && (!b.marker || (b.marker.kind === 'inspector' && INSPECTOR));

/** The statuses a block's comments announce: a comment that starts with a 4xx code. */
function announced(code: string): number[] {
  const out: number[] = [];
  for (const line of code.split('\n')) {
    const comment = /(?:^|\s)#\s*(.*)$/.exec(line)?.[1] ?? '';
    const status = /^([45]\d\d)\b/.exec(comment)?.[1];
    if (status) out.push(Number(status));
  }
  return out.sort();
}

// The README tour's helpers and first step: the setup every guide's examples start from.
const readme = readFileSync(join(root, 'README.md'), 'utf8');
const tour = readme.slice(readme.indexOf('## A five-minute tour'));
const tourSh = [...tour.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]);
const [, HELPERS, FIRST_STEP] = tourSh; // tourSh[0] is `npm start`

/** `api` as the tour defines it, also recording each answer's status for the checks. */
const RECORDING_API = `api() {
  local out; out=$(curl -s -w '\\n%{http_code}' -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' "$@")
  printf '%s\\n' "\${out%$'\\n'*}"
  echo "$BLOCK \${out##*$'\\n'}" >> "$CALLS"
}`;
const MARK = '__LOUPE_GUIDE_BLOCK__';

const freePort = () =>
  new Promise<number>((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });

/** The model: a query for any question, an answer from the rows, a short text for anything else. */
function model(req: RecordedRequest) {
  const messages = req.body.messages ?? [];
  const last = messages.at(-1);
  if (last?.role === 'tool') return { content: 'Here is what the data says.' };
  if (req.body.tools)
    return { toolCalls: [{ name: 'run_query', arguments: { sql: 'SELECT code FROM plans ORDER BY id' } }] };
  return { content: 'A short description.' };
}

describe('the guides: every example as written', () => {
  let s: TestServer;
  let fake: FakeOpenAI;
  const pg = inject('postgres');
  const pgDatabase = `guide_${Date.now()}`;
  const dirs: string[] = [];

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    for (let i = 0; i < 200; i++) fake.script(model);
    s = await startTestServer({
      env: {
        LOUPE_DEMO_DATA: 'true',
        LOUPE_DEV_ALLOW_LOOPBACK_HTTP: 'true',
        OPENAI_API_KEY: fake.apiKey,
        OPENAI_BASE_URL: fake.url,
        LOUPE_MODEL: 'test-model',
      },
    });
    // The PostgreSQL database of connections.md: an analytics database with an orders table.
    await createPostgresDatabase(pg, pgDatabase);
    await postgresAdmin(
      pg,
      pgDatabase,
      `CREATE TABLE orders (id int PRIMARY KEY, status text NOT NULL, total numeric(10,2) NOT NULL);
       INSERT INTO orders VALUES (1, 'paid', 10.50), (2, 'open', 3.00), (3, 'refunded', 7.25);
       GRANT SELECT ON orders TO ${pg.user}`,
    );
  });
  afterAll(async () => {
    await s?.stop();
    await fake?.stop();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  /** A new organization as the guides expect it: the demo database in its folder, registered as the demo. */
  async function organization(name: string) {
    const org = await createOrganization({ name, adminEmail: `admin@${name}.example` });
    const folder = join(s.dataDir, 'sqlite', org.orgId);
    mkdirSync(folder, { recursive: true });
    copyFileSync(join(s.dataDir, 'sqlite', s.app.orgId, 'demo.sqlite'), join(folder, 'demo.sqlite'));
    const demo = await s.call('POST', '/connections', {
      key: org.key,
      body: { name: 'Demo SaaS (SQLite)', type: 'SQLITE', database: 'demo.sqlite' },
    });
    expect(demo.status, demo.text).toBe(201);
    const cwd = mkdtempSync(join(tmpdir(), `loupe-guide-${name}-`));
    dirs.push(cwd);
    mkdirSync(join(cwd, '.data'));
    writeFileSync(join(cwd, '.data', 'admin-key'), org.key);
    return { ...org, cwd, folder };
  }

  /** Runs the setup, then the guide's runnable blocks; answers each block's output and API statuses. */
  async function run(name: string) {
    const org = await organization(name.replace(/\.md$/, ''));
    const blocks = guide(name).filter(runnable);
    const script = [
      'set -eu -o pipefail',
      `CALLS="$PWD/calls.log"; BLOCK=setup; : > "$CALLS"`,
      "trap 'kill $(jobs -p) 2>/dev/null' EXIT",
      HELPERS,
      // The tour's receiver starts in the background: the guides may use it at once.
      'until curl -s -o /dev/null "http://127.0.0.1:$HOOK_PORT/"; do sleep 0.1; done; : > hooks.log',
      RECORDING_API,
      FIRST_STEP,
      ...blocks.map((b, i) => `echo "${MARK}${i}"\nBLOCK=${i}\n${b.code}`),
      `echo "${MARK}end"`,
    ].join('\n');
    const env = {
      ...process.env,
      LOUPE: s.url,
      HOOK_PORT: String(await freePort()),
      RX_PORT: String(await freePort()),
      PGHOST: pg.host,
      PGPORT: String(pg.port),
      PGDATABASE: pgDatabase,
      PGUSER: pg.user,
      PGPASSWORD: pg.password,
      npm_config_cache: join(org.cwd, '.npm'),
      npm_config_update_notifier: 'false',
    };
    const [stdout, stderr] = await new Promise<[string, string]>((resolve, reject) =>
      execFile(
        'bash',
        ['-c', script],
        { cwd: org.cwd, env, timeout: 240_000, maxBuffer: 20 * 1024 * 1024 },
        (err, out, errOut) =>
          err ? reject(new Error(`${name}: ${err.message}\n${out}\n${errOut}`)) : resolve([out, errOut]),
      ),
    );
    const parts = stdout.split(new RegExp(`${MARK}(?:\\d+|end)\\n`));
    const calls = readFileSync(join(org.cwd, 'calls.log'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => l.split(' '))
      .map(([block, status]) => ({ block, status: Number(status) }));
    for (const c of calls)
      expect(c.status, `${name}: block ${c.block} answered ${c.status}`).toBeLessThan(500);
    for (const [i, b] of blocks.entries()) {
      const failed = calls.filter((c) => c.block === String(i) && c.status >= 300).map((c) => c.status);
      expect(failed.sort(), `${name}, block at line ${b.line}: non-2xx answers vs. its comments`).toEqual(
        announced(b.code),
      );
    }
    expect(calls.filter((c) => c.block === 'setup' && c.status >= 300)).toEqual([]);
    return {
      org,
      blocks,
      outputs: parts.slice(1, blocks.length + 1),
      stdout,
      stderr,
      hooks: () => readHooks(org.cwd),
    };
  }
  const readHooks = (cwd: string) => {
    try {
      return readFileSync(join(cwd, 'hooks.log'), 'utf8');
    } catch {
      return '';
    }
  };

  it('every block is run, or says why not', () => {
    expect(HELPERS).toContain('api()');
    expect(FIRST_STEP).toContain('CONN=');
    for (const name of GUIDES)
      for (const b of guide(name)) {
        if (!b.marker) continue;
        expect(['skip', 'mcp-config', 'inspector'], `${name}:${b.line}`).toContain(b.marker.kind);
        if (b.marker.kind === 'skip') expect(b.marker.reason.length, `${name}:${b.line}`).toBeGreaterThan(5);
      }
    // Every guide with shell examples runs some of them.
    const withShell = GUIDES.filter((g) => guide(g).some((b) => b.lang === 'sh'));
    expect(withShell.filter((g) => !guide(g).some(runnable))).toEqual(['console.md']);
  });

  it('approvals.md: the second admin approves the write, and it ran once', async () => {
    const r = await run('approvals.md');
    const db = new DatabaseSync(join(r.org.folder, 'demo.sqlite'), { readOnly: true });
    try {
      expect(db.prepare("SELECT is_public FROM plans WHERE code = 'free'").get()).toEqual({ is_public: 0 });
    } finally {
      db.close();
    }
  });

  it('chat.md: asks, follows up in the same conversation, and streams', async () => {
    const r = await run('chat.md');
    expect(r.outputs[0]).toMatch(/"conversationId"/);
    expect(r.outputs[0]).toMatch(/event: done|"type":"done"/);
  });

  it('connections.md: PostgreSQL from the PG* variables, tested, annotated; the demo file as SQLite', async () => {
    const r = await run('connections.md');
    expect(r.outputs[0]).toContain('"success":true');
    expect(r.outputs[0]).toContain('only paid orders count as revenue');
  });

  it('dashboards.md: a widget, a saved query with a date parameter, a metric', async () => {
    const r = await run('dashboards.md');
    expect(r.outputs[0]).toContain('"columns":["month","revenue_usd"]');
    expect(r.outputs[0]).toContain('"columns":["n"]');
    expect(r.outputs[0]).toMatch(/"value":\d+/);
  });

  it('event-webhooks.md: an endpoint, its test and log, a rotation; a local receiver gets a signed event', async () => {
    const r = await run('event-webhooks.md');
    expect(r.outputs[0]).toMatch(/^whsec_/m);
    expect(r.outputs[0]).toMatch(/^true$/m);
    expect(r.outputs[0]).toMatch(/^1$/m); // hooks.log: the test event
    expect(r.hooks()).toMatch(/^POST \/events \{"id":"[\w-]+","type":"webhook.test"/m);
    expect(r.outputs.at(-1)).toMatch(/^true$/m);
    expect(r.stdout).toMatch(/^POST \/events [\w-]+ \{"id":/m);
  });

  it('keys-members-usage.md: keys, a member with her key, usage', async () => {
    const r = await run('keys-members-usage.md');
    expect(r.outputs[0]).toContain('"deleted":true');
  });

  it('mcp.md: a key for the agent, the stdio bridge by hand, a tool call over HTTP', async () => {
    const r = await run('mcp.md');
    const text = r.stdout;
    expect(text).toMatch(/^\{"result":\{"protocolVersion":"2025-11-25"/m);
    expect(text).toMatch(/^\{"result":\{"tools":\[\{"name":"list_connections"/m);
    expect(text).toContain('"structuredContent":{"connections":[');
    if (INSPECTOR) {
      // --strict: no portability warning on stderr; list_dashboards over HTTP with --header; the bridge
      // launched by the Inspector (its stdio target and -e variables).
      expect(r.stderr).not.toMatch(/Warning: tool/);
      expect(text).toMatch(/No dashboards\.|\d+ dashboards? in all\./);
      expect(text).toMatch(/\d+ connections? in all\./);
    }
  }, 300_000);

  it('mcp.md: each JSON client configuration works as a client would load it', async () => {
    const configs = guide('mcp.md').filter((b) => b.marker?.kind === 'mcp-config');
    expect(configs).toHaveLength(2);
    expect(readdirSync(CONSOLE_DIR)).toContain('loupe-mcp.tgz'); // built by npm run build:console
    const origin = s.url.replace(/\/v1$/, '');
    const home = mkdtempSync(join(tmpdir(), 'loupe-guide-config-'));
    dirs.push(home);
    for (const b of configs) {
      const filled = b.code.replaceAll('http://localhost:3000', origin).replaceAll('<key>', s.adminKey);
      const server = JSON.parse(filled).mcpServers.loupe;
      const transport = server.url
        ? new StreamableHTTPClientTransport(new URL(server.url), { requestInit: { headers: server.headers } })
        : new StdioClientTransport({
            command: server.command,
            args: server.args,
            cwd: home,
            env: {
              PATH: process.env.PATH ?? '',
              HOME: home,
              npm_config_cache: join(home, '.npm'),
              ...server.env,
            },
          });
      const client = new Client({ name: 'guide-config', version: '1.0.0' });
      try {
        await client.connect(transport);
        expect((await client.listTools()).tools.map((t) => t.name)).toContain('get_widget_data');
      } finally {
        await client.close();
      }
    }
  }, 120_000);

  it('querying.md: a read and the history', async () => {
    const r = await run('querying.md');
    expect(r.outputs[0]).toContain('"rowCount":4');
  });

  it('workflows.md: draft, preview, action test, publish, schedule, runs, stop', async () => {
    const r = await run('workflows.md');
    expect(r.outputs[0]).toContain('"status":"READY"');
    expect(r.hooks()).toMatch(/^POST \/loupe \{"workflow": "Daily signups", "signups": \[\{"n":\d+\}\]\}$/m);
  }, 300_000);
});
