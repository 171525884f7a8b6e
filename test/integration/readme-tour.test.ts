import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeOpenAI, type RecordedRequest, startFakeOpenAI } from '../support/fake-openai';
import { startTestServer, type TestServer } from '../support/server';

/**
 * The README's five-minute tour, run as written: its shell blocks, in order, in one bash process against
 * the real local runtime (`$LOUPE`, `.data/admin-key`, a free `$HOOK_PORT`), with the demo database,
 * LOUPE_DEV_ALLOW_LOOPBACK_HTTP on and the test model server as the provider. Each block's output must be
 * the answer the README shows after it (a ```json block: the fields shown; a ```text block: the lines).
 */
const readme = readFileSync(join(import.meta.dirname, '..', '..', 'README.md'), 'utf8');
const tour = readme.slice(
  readme.indexOf('## A five-minute tour'),
  readme.indexOf('\n## ', readme.indexOf('## A five-minute tour') + 5),
);
const blocks = [...tour.matchAll(/```(\w+)\n([\s\S]*?)```/g)].map((m) => ({ lang: m[1], code: m[2] }));
/** Each shell block with the answer block that follows it, if any; the first block (`npm start`) is the server. */
const steps = blocks
  .map((b, i) => ({ ...b, answer: blocks[i + 1] && blocks[i + 1].lang !== 'sh' ? blocks[i + 1] : undefined }))
  .filter((b) => b.lang === 'sh')
  .slice(1);
const MARK = '__LOUPE_TOUR_STEP__';

const freePort = () =>
  new Promise<number>((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });

/** The model of the chat step: a query for the question, then a sentence from its rows; otherwise a summary. */
function model(req: RecordedRequest) {
  const messages = req.body.messages ?? [];
  const last = messages.at(-1);
  if (last?.role === 'tool')
    return { content: `There are ${JSON.parse(last.content).rows?.[0]?.n} public plans.` };
  if (req.body.tools && JSON.stringify(messages).includes('How many plans are public?'))
    return {
      toolCalls: [
        { name: 'run_query', arguments: { sql: 'SELECT count(*) AS n FROM plans WHERE is_public = 1' } },
      ],
    };
  return { content: 'A small SaaS business: accounts, plans, subscriptions and payments.' };
}

describe('the README tour', () => {
  let s: TestServer;
  let fake: FakeOpenAI;
  let cwd: string;
  beforeAll(async () => {
    cwd = mkdtempSync(join(tmpdir(), 'loupe-tour-'));
    fake = await startFakeOpenAI();
    for (let i = 0; i < 30; i++) fake.script(model);
    s = await startTestServer({
      dataDir: join(cwd, '.data'),
      env: {
        LOUPE_DEMO_DATA: 'true',
        LOUPE_DEV_ALLOW_LOOPBACK_HTTP: 'true',
        OPENAI_API_KEY: fake.apiKey,
        OPENAI_BASE_URL: fake.url,
        LOUPE_MODEL: 'test-model',
      },
    });
  });
  afterAll(async () => {
    await s?.stop();
    await fake?.stop();
    rmSync(cwd, { recursive: true, force: true });
  });

  it('has the eight steps, each followed by the answer it shows', () => {
    expect(steps.length).toBe(9); // the helpers and receiver, then steps 1 to 8
    expect(steps.slice(1).every((st) => st.answer)).toBe(true);
    expect(blocks[0].code).toContain('npm start');
  });

  it('runs as written and gets the answers shown', async () => {
    const script = [
      'set -u',
      "trap 'kill $(jobs -p) 2>/dev/null' EXIT",
      ...steps.map((st, i) => `${st.code}\necho "${MARK}${i}"`),
    ].join('\n');
    const hookPort = await freePort();
    const out = await new Promise<string>((resolve, reject) =>
      execFile(
        'bash',
        ['-c', script],
        {
          cwd,
          env: { ...process.env, LOUPE: s.url, HOOK_PORT: String(hookPort) },
          timeout: 120_000,
          maxBuffer: 10 * 1024 * 1024,
        },
        (err, stdout, stderr) =>
          err ? reject(new Error(`${err.message}\n${stdout}\n${stderr}`)) : resolve(stdout),
      ),
    );
    const outputs = out.split(new RegExp(`${MARK}\\d+\\n`));
    for (const [i, st] of steps.entries()) {
      const got = outputs[i].trim();
      const label = `step ${i}:\n${st.code}\noutput:\n${got}`;
      if (!st.answer) continue;
      if (st.answer.lang === 'json')
        expect(JSON.parse(got.split('\n').at(-1) ?? ''), label).toMatchObject(JSON.parse(st.answer.code));
      else expect(got.split('\n'), label).toEqual(st.answer.code.trim().split('\n'));
    }
  });
});
