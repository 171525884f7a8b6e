import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createConnection, postgresConnection } from '../support/connections';
import { type HttpsReceiver, startHttpsReceiver } from '../support/https-receiver';
import { captureOutput } from '../support/output';
import { startTestServer, type TestServer } from '../support/server';
import { waitFor } from '../support/wait';

const suffix = randomBytes(4).toString('hex');

/**
 * Issue 22, item 6: in the local runtime many invocations share one thread. Each HTTP request and each
 * worker invocation logs with its own context: the lines a queue worker writes while HTTP requests are
 * in flight carry the worker's function name and request id, never a request's, and each request's
 * lines carry its own request id. Read back from the real log output (Powertools JSON lines).
 */
describe('log context is isolated per invocation', () => {
  let s: TestServer;
  let rx: HttpsReceiver;
  let conn: string;
  const output = captureOutput();
  const info = inject('postgres');

  beforeAll(async () => {
    rx = await startHttpsReceiver((_req, res) => {
      setTimeout(() => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"ok":true}');
      }, 600);
    });
    s = await startTestServer({
      env: {
        LOUPE_LOG_LEVEL: 'INFO',
        LOUPE_OUTBOUND_TEST_HOSTS: rx.testHostEntry,
        LOUPE_MANUAL_RUN_WAIT_MS: '15000',
      },
    });
    conn = await createConnection(s, postgresConnection(info, { name: `logs-${suffix}` }));
  });
  afterAll(async () => {
    output.stop();
    await s?.stop();
    await rx?.close();
  });

  const workflow = async (name: string) => {
    const r = await s.call('POST', '/workflows', {
      body: {
        name: `${name}-${suffix}`,
        triggerType: 'MANUAL',
        connectionId: conn,
        steps: [{ query: 'SELECT 1 AS one' }],
        actions: [
          {
            type: 'WEBHOOK',
            order: 0,
            config: {
              version: 2,
              url: `${rx.url}/${name}`,
              method: 'POST',
              bodyMode: 'JSON',
              bodyTemplate: '{"n": {{query_1.row_count}}}',
              retry: { maxAttempts: 1, baseDelayMs: 100 },
            },
          },
        ],
      },
    });
    expect(r.status, r.text).toBe(201);
    return r.body.data.id as string;
  };

  const jsonLines = () =>
    output.lines
      .join('')
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => {
        try {
          return JSON.parse(l) as Record<string, unknown>;
        } catch {
          return undefined;
        }
      })
      .filter((l): l is Record<string, unknown> => !!l);

  it('worker lines written while requests are in flight carry the worker context; each request its own', async () => {
    const [a, b] = [await workflow('first'), await workflow('second')];
    output.start();
    // Two runs at once (each request waits while the runner worker executes its run), with other
    // requests interleaved on the same thread.
    const runs = Promise.all([s.call('POST', `/workflows/${a}/run`), s.call('POST', `/workflows/${b}/run`)]);
    const others = await Promise.all(
      Array.from({ length: 6 }, (_, i) => s.call('GET', `/workflows/${i % 2 ? a : b}`)),
    );
    const answers = await runs;
    // The runner logs a run's end just after recording it: the answer may come first.
    await waitFor('the runner to log both ends', async () =>
      answers.every((a) =>
        jsonLines().some((l) => l.message === 'manual run finished' && l.runId === a.body.data?.id),
      ),
    );
    output.stop();
    for (const o of others) expect(o.status).toBe(200);
    const lines = jsonLines();
    const httpRequestIds = new Set([...answers, ...others].map((r) => r.body.meta.requestId as string));

    for (const answer of answers) {
      expect(answer.status, answer.text).toBe(201);
      const run = answer.body.data;
      expect(run.status, run.error).toBe('SUCCESS');
      const handed = lines.filter(
        (l) => l.message === 'manual run handed to the runner' && l.runId === run.id,
      );
      const finished = lines.filter((l) => l.message === 'manual run finished' && l.runId === run.id);
      expect(handed, JSON.stringify(lines.slice(-20))).toHaveLength(1);
      expect(finished).toHaveLength(1);
      // The request's own line: its function and its own request id.
      expect(handed[0]).toMatchObject({
        function_name: 'loupe-workflows',
        requestId: answer.body.meta.requestId,
      });
      // The worker's line, written while both requests were waiting: the worker's context only.
      const w = finished[0];
      expect(w.function_name).toBe('loupe-workflow-runner');
      expect(w.requestId).toBeUndefined();
      expect(httpRequestIds.has(String(w.requestId))).toBe(false);
      expect(w.function_request_id).not.toBe(handed[0].function_request_id);
    }
    // Every line of a request carries the function of its path, never the worker's.
    const requestLines = lines.filter((l) => typeof l.requestId === 'string');
    for (const l of requestLines) {
      expect(httpRequestIds.has(l.requestId as string), JSON.stringify(l)).toBe(true);
      expect(l.function_name).toBe('loupe-workflows');
    }
    // Worker lines never carry a request's id.
    for (const l of lines.filter((x) => x.function_name === 'loupe-workflow-runner'))
      expect(l.requestId, JSON.stringify(l)).toBeUndefined();
  });
});
