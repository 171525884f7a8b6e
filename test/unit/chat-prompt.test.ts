import { describe, expect, it } from 'vitest';
import {
  boundLoopMessages,
  buildMessages,
  type HistoryMessage,
  historyMessages,
  systemPrompt,
} from '../../shared/chat/prompt';
import { buildSchemaContext } from '../../shared/chat/schema-context';

const conn = (type: any) => ({ name: 'Shop', type, database: 'shop' });
const schema = buildSchemaContext(
  [
    {
      name: 'orders',
      kind: 'table',
      columns: [{ name: 'id', type: 'int', nullable: false, primaryKey: true }],
      primaryKey: ['id'],
      foreignKeys: [],
      rowEstimate: 5,
    },
  ],
  [],
  'orders',
);

describe('system prompt', () => {
  it('names the connection, its dialect, the rules and the schema', () => {
    const p = systemPrompt({
      connection: conn('MSSQL'),
      schema,
      schemaSummary: 'Orders of a shop.',
      history: [],
      question: 'q',
      today: '2026-05-01',
    });
    expect(p).toContain('Connected database: "Shop", MSSQL, database shop.');
    expect(p).toContain('SELECT TOP (n)');
    expect(p).toContain('Today is 2026-05-01.');
    expect(p).toContain('at most 3 corrections');
    expect(p).toContain('You see at most 20 rows');
    expect(p).toContain('Overview of the database:\nOrders of a shop.');
    expect(p).toContain('Schema (1 tables):\nTABLE orders (~5 rows)');
  });

  it('has a dialect line for every database type', () => {
    for (const [type, marker] of [
      ['POSTGRES', 'double quotes'],
      ['MYSQL', 'backticks'],
      ['MARIADB', 'backticks'],
      ['SQLITE', "date('now')"],
      ['MONGODB', '"pipeline"'],
    ] as const)
      expect(
        systemPrompt({ connection: conn(type), schema, schemaSummary: null, history: [], question: 'q' }),
      ).toContain(marker);
  });

  it('says when the schema has not been read', () => {
    const p = systemPrompt({
      connection: conn('POSTGRES'),
      schema: null,
      schemaSummary: null,
      history: [],
      question: 'q',
    });
    expect(p).toContain('has not been read yet');
  });

  it('without a connection asks the model to ask which one, listing those the user may use', () => {
    const p = systemPrompt({
      connection: null,
      availableConnections: [{ id: 'c1', name: 'Sales', type: 'POSTGRES' }],
      schema: null,
      schemaSummary: null,
      history: [],
      question: 'q',
    });
    expect(p).toContain('No database connection is selected');
    expect(p).toContain('"Sales" (POSTGRES, id c1)');
    expect(p).not.toContain('Rules:');
    const none = systemPrompt({
      connection: null,
      availableConnections: [],
      schema: null,
      schemaSummary: null,
      history: [],
      question: 'q',
    });
    expect(none).toContain('no connections available yet');
  });
});

describe('conversation history in the prompt', () => {
  const h = (
    role: 'USER' | 'ASSISTANT',
    content: string,
    sqlQuery: string | null = null,
    resultSummary: string | null = null,
  ): HistoryMessage => ({
    role,
    content,
    sqlQuery,
    resultSummary,
  });

  it('gives each earlier answer with its SQL and result summary', () => {
    const msgs = historyMessages([
      h('USER', 'Top customer?'),
      h('ASSISTANT', 'Ada.', 'SELECT 1', '1 row; columns: name'),
    ]);
    expect(msgs).toEqual([
      { role: 'user', content: 'Top customer?' },
      { role: 'assistant', content: 'Ada.\n\nSQL used:\nSELECT 1\n\nResult: 1 row; columns: name' },
    ]);
  });

  it('keeps only the latest six messages, starting with a question, each clipped', () => {
    const many = Array.from({ length: 9 }, (_, i) =>
      h(i % 2 ? 'ASSISTANT' : 'USER', `m${i} ${'x'.repeat(5000)}`),
    );
    const msgs = historyMessages(many);
    expect(msgs).toHaveLength(5);
    expect(msgs[0].role).toBe('user');
    expect(String(msgs[0].content).startsWith('m4')).toBe(true);
    expect(msgs.every((m) => String(m.content).length <= 1_500)).toBe(true);
  });

  it('orders system prompt, history, then the question', () => {
    const msgs = buildMessages({
      connection: conn('POSTGRES'),
      schema,
      schemaSummary: null,
      history: [h('USER', 'a'), h('ASSISTANT', 'b')],
      question: 'c',
    });
    expect(msgs.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'user']);
    expect(msgs.at(-1)).toEqual({ role: 'user', content: 'c' });
  });
});

describe('loop bound', () => {
  it('shortens the oldest tool results first once the request grows past the limit', () => {
    const msgs: any[] = [
      { role: 'system', content: 's' },
      { role: 'tool', tool_call_id: '1', content: 'a'.repeat(5000) },
      { role: 'tool', tool_call_id: '2', content: 'b'.repeat(5000) },
    ];
    boundLoopMessages(msgs, 7000);
    expect(msgs[1].content).toMatch(/^a{280}… \[shortened\]$/);
    expect(msgs[2].content).toBe('b'.repeat(5000));
    boundLoopMessages(msgs, 100_000);
    expect(msgs[2].content).toBe('b'.repeat(5000));
  });
});
