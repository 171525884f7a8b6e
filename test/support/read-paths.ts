import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { expect } from 'vitest';
import type { FakeOpenAI, RecordedRequest } from './fake-openai';
import { callTool, textOf } from './mcp';
import type { TestServer } from './server';

/** What a read path answered, shaped like an API answer (status, text, body with data or error). */
export interface PathAnswer {
  status: number;
  text: string;
  body: any;
}

export type ReadPath = [name: string, read: (sql: string) => Promise<PathAnswer>];

/**
 * Every path by which a statement reaches a connection as a read: the query endpoint, a widget's
 * data, a saved query's run, a metric's value, a workflow step (a manual run), the chat's run_query
 * tool (the scripted model asks to run the statement) and the MCP run_query tool. Paths that check a
 * statement when it is saved answer the save's refusal; the others the run's. The workflow run and
 * the tools carry the refusal as text: their answers are reshaped to { status: 400, body.error }.
 */
export function readPaths(
  s: TestServer,
  opts: { fake: FakeOpenAI; mcp: Client; connectionId: string; dashboardId: string; tag: string },
): ReadPath[] {
  const { fake, mcp, connectionId, dashboardId, tag } = opts;
  let n = 0;
  const saveThenRun = async (
    save: () => Promise<PathAnswer>,
    run: (id: string) => Promise<PathAnswer>,
  ): Promise<PathAnswer> => {
    const saved = await save();
    if (saved.status === 400) return saved;
    expect(saved.status, saved.text).toBe(201);
    return run(saved.body.data.id);
  };
  return [
    ['query', (sql) => s.call('POST', `/connections/${connectionId}/query`, { body: { sql } })],
    [
      'widget data',
      (sql) =>
        saveThenRun(
          () =>
            s.call('POST', `/dashboards/${dashboardId}/widgets`, {
              body: { title: `w${++n}`, type: 'TABLE', query: sql, connectionId },
            }),
          (id) => s.call('GET', `/dashboards/${dashboardId}/widgets/${id}/data`),
        ),
    ],
    [
      'saved query run',
      (sql) =>
        saveThenRun(
          () =>
            s.call('POST', '/saved-queries', {
              body: { name: `q${++n} ${tag}`, query: sql, connectionId, parameters: [] },
            }),
          (id) => s.call('POST', `/saved-queries/${id}/run`, { body: {} }),
        ),
    ],
    [
      'metric value',
      (sql) =>
        saveThenRun(
          () => s.call('POST', '/metrics', { body: { name: `m${++n} ${tag}`, formula: sql, connectionId } }),
          (id) => s.call('GET', `/metrics/${id}/value`),
        ),
    ],
    [
      'workflow step',
      async (sql) => {
        const r = await saveThenRun(
          () =>
            s.call('POST', '/workflows', {
              body: { name: `wf${++n} ${tag}`, triggerType: 'MANUAL', connectionId, steps: [{ query: sql }] },
            }),
          (id) => s.call('POST', `/workflows/${id}/run`),
        );
        if (r.status !== 201) return r;
        const [step] = JSON.parse(r.body.data.stepResults);
        if (r.body.data.status === 'SUCCESS') return { status: 200, text: r.text, body: { data: step } };
        expect(step, r.text).toMatchObject({ status: 'FAILED' });
        return {
          status: step.errorCode === 'READ_ONLY_VIOLATION' ? 400 : 422,
          text: r.text,
          body: { error: { code: step.errorCode, message: step.error } },
        };
      },
    ],
    [
      'chat tool',
      async (sql) => {
        let tool: any;
        fake.script({ toolCalls: [{ name: 'run_query', arguments: { sql } }] }, (req: RecordedRequest) => {
          const tools = req.body.messages.filter((m: any) => m.role === 'tool');
          tool = JSON.parse(tools[tools.length - 1].content);
          return { content: 'Done.' };
        });
        const r = await s.call('POST', '/chat', { body: { message: `Run ${sql}`, connectionId } });
        expect(r.status, r.text).toBe(200);
        if (tool.ok === false)
          return {
            status: tool.code === 'READ_ONLY_VIOLATION' ? 400 : 422,
            text: JSON.stringify(tool),
            body: { error: { code: tool.code, message: tool.error } },
          };
        return { status: 200, text: JSON.stringify(tool), body: { data: tool } };
      },
    ],
    [
      'MCP run_query',
      async (sql) => {
        const r = await callTool(mcp, 'run_query', { connectionId, sql });
        if (!r.isError) return { status: 200, text: textOf(r), body: { data: r.structuredContent } };
        const error = r.structuredContent?.error ?? { message: textOf(r) };
        return {
          status: error.code === 'READ_ONLY_VIOLATION' ? 400 : 422,
          text: textOf(r),
          body: { error },
        };
      },
    ],
  ];
}
