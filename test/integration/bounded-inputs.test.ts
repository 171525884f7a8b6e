/**
 * Bounded inputs: a MongoDB query nested 10,000 levels is a 400 (not a stack overflow 500), through
 * the query endpoint and saved queries; JSON bodies that deep are 400s on other routes too.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseMongoQuery } from '../../shared/guard/mongo';
import { nestedDeeperThan } from '../../shared/platform/json-depth';
import { createConnection } from '../support/connections';
import { startTestServer, type TestServer } from '../support/server';

const deepFilter = (levels: number) => `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;
const deepQuery = (levels: number) => `{"collection":"orders","filter":${deepFilter(levels)}}`;
const deepArray = (levels: number) => `${'['.repeat(levels)}1${']'.repeat(levels)}`;

describe('json depth (unit)', () => {
  it('measures depth without recursion, at the limit and past it', () => {
    expect(nestedDeeperThan(JSON.parse(deepArray(100)))).toBe(false);
    expect(nestedDeeperThan(JSON.parse(deepArray(101)))).toBe(true);
    expect(nestedDeeperThan(JSON.parse(deepArray(100_000)))).toBe(true);
    expect(nestedDeeperThan({ a: [1, { b: 'x' }], c: null })).toBe(false);
    expect(nestedDeeperThan('plain')).toBe(false);
  });

  it('parseMongoQuery: 10,000 levels is a 400 VALIDATION_ERROR, 40 levels parse', () => {
    let caught: { status?: number; code?: string; details?: unknown } | undefined;
    try {
      parseMongoQuery(deepQuery(10_000));
    } catch (e) {
      caught = e as typeof caught;
    }
    expect(caught).toMatchObject({ status: 400, code: 'VALIDATION_ERROR', details: { maxDepth: 100 } });
    expect(parseMongoQuery(deepQuery(40)).collection).toBe('orders');
  });
});

describe('over HTTP', () => {
  let s: TestServer;
  let mongoId: string;
  beforeAll(async () => {
    s = await startTestServer();
    // Never reached: the query is refused before any connection is opened.
    mongoId = await createConnection(s, {
      name: 'docs',
      type: 'MONGODB',
      host: 'mongo.invalid',
      database: 'app',
    });
  });
  afterAll(async () => {
    await s?.stop();
  });

  const hostile: Array<[string, string]> = [
    ['a filter nested 10,000 levels', deepQuery(10_000)],
    [
      'a pipeline nested 10,000 levels',
      `{"collection":"orders","pipeline":[{"$match":${deepFilter(10_000)}}]}`,
    ],
    ['an array nested 40,000 levels', `{"collection":"orders","filter":{"a":{"$in":${deepArray(40_000)}}}}`],
    ['a filter nested 101 levels', deepQuery(101)],
  ];
  for (const [name, sql] of hostile)
    it(`POST /connections/{id}/query with ${name} is 400`, async () => {
      const r = await s.call('POST', `/connections/${mongoId}/query`, { body: { sql } });
      expect(r.status, r.text.slice(0, 300)).toBe(400);
      expect(r.body.error.code).toBe('VALIDATION_ERROR');
      expect(r.body.error.message).toContain('nested more than 100 levels');
    });

  it('a saved query nested 10,000 levels is 400 at save time', async () => {
    const r = await s.call('POST', '/saved-queries', {
      body: { name: 'deep', connectionId: mongoId, query: deepQuery(10_000) },
    });
    expect(r.status, r.text.slice(0, 300)).toBe(400);
    expect(r.text).toContain('nested more than 100 levels');
    const shallow = await s.call('POST', '/saved-queries', {
      body: { name: 'shallow', connectionId: mongoId, query: deepQuery(20) },
    });
    expect(shallow.status, shallow.text.slice(0, 300)).toBe(201);
  });

  it('a request body nested 100,000 levels is a 400, not a 500', async () => {
    const r = await s.call('POST', `/connections/${mongoId}/query`, {
      rawBody: `{"sql":${deepArray(100_000)}}`,
      headers: { 'content-type': 'application/json' },
    });
    expect(r.status).toBe(400);
  });
});
