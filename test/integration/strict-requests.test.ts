/**
 * Every request body and query string is strict: a field the endpoint does not define is 400
 * VALIDATION_ERROR naming it. The endpoint list comes from the registry (the same one the OpenAPI document
 * is built from), so a new endpoint cannot be missed; the OpenAPI document says `additionalProperties:
 * false` on every request body object.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type * as z from 'zod/mini';
import { allEndpoints } from '../../functions/endpoints';
import { buildOpenApi } from '../../shared/http/openapi';
import { unknownFields } from '../../shared/http/strict';
import { startTestServer, type TestServer } from '../support/server';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.stop());

const pathOf = (path: string) => path.replace(/\{\w+\}/g, 'x1');
const UNKNOWN = 'definitelyNotAField';

type Issue = { path: string; message: string; code: string };
const issuesOf = (body: { error: { details?: { issues?: Issue[] } } }) => body.error?.details?.issues ?? [];

describe('unknown fields answer 400 naming them, on every endpoint', () => {
  const withBody = allEndpoints.filter((e) => e.body);
  it('the registry has endpoints with bodies', () => expect(withBody.length).toBeGreaterThan(25));

  it.each(withBody.map((e) => [`${e.method} ${e.path}`, e] as const))('body of %s', async (_, spec) => {
    const res = await server.call(spec.method, pathOf(spec.path), { body: { [UNKNOWN]: 1 } });
    expect(res.status, res.text).toBe(400);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
    expect(issuesOf(res.body)).toContainEqual(
      expect.objectContaining({ path: `body.${UNKNOWN}`, code: 'unrecognized_keys' }),
    );
    expect(res.body.error.details.issues.find((i: Issue) => i.path === `body.${UNKNOWN}`).message).toContain(
      UNKNOWN,
    );
  });

  it.each(allEndpoints.map((e) => [`${e.method} ${e.path}`, e] as const))('query of %s', async (_, spec) => {
    const res = await server.call(spec.method, `${pathOf(spec.path)}?${UNKNOWN}=1`, {
      ...(spec.body ? { body: {} } : {}),
      ...(spec.auth === 'none' ? { key: null } : {}),
    });
    expect(res.status, res.text).toBe(400);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
    expect(issuesOf(res.body)).toContainEqual(
      expect.objectContaining({ path: `query.${UNKNOWN}`, code: 'unrecognized_keys' }),
    );
  });

  it('a query parameter given twice is 400 naming it, not its last value kept silently', async () => {
    const res = await server.call('GET', '/connections?page=1&pageSize=5&page=2');
    expect(res.status, res.text).toBe(400);
    expect(issuesOf(res.body)).toEqual([
      expect.objectContaining({
        path: 'query.page',
        code: 'repeated',
        message: expect.stringContaining('2 times'),
      }),
    ]);
    expect((await server.call('GET', '/connections?page=1&pageSize=5')).status).toBe(200);
  });

  it('an endpoint without a body schema refuses body fields', async () => {
    const spec = allEndpoints.find((e) => e.method === 'POST' && !e.body && e.auth !== 'none');
    expect(spec).toBeDefined();
    const res = await server.call('POST', pathOf(spec!.path), { body: { [UNKNOWN]: true } });
    expect(res.status).toBe(400);
    expect(issuesOf(res.body).map((i) => i.path)).toContain(`body.${UNKNOWN}`);
  });

  it('nested objects are strict too, and a known misspelling is named (parameters for params)', async () => {
    const created = await server.call('POST', '/saved-queries', {
      body: { name: 'n', connectionId: 'x1', sql: 'SELECT 1', [UNKNOWN]: 1 },
    });
    expect(issuesOf(created.body).map((i) => i.path)).toContain(`body.${UNKNOWN}`);
    const run = await server.call('POST', '/saved-queries/x1/run', { body: { parameters: { a: 1 } } });
    expect(run.status).toBe(400);
    expect(issuesOf(run.body).map((i) => i.path)).toContain('body.parameters');
  });

  it('every field the request schemas define is still accepted (no false unknowns on valid shapes)', () => {
    // A value with every property the JSON schema of each body lists, at the top level, reports none.
    const openapi = buildDoc();
    for (const spec of withBody) {
      const op = openapi.paths[spec.path][spec.method.toLowerCase()];
      const schema = op.requestBody.content['application/json'].schema;
      for (const props of topLevelPropertySets(schema)) {
        const value = Object.fromEntries(props.map((p) => [p, undefined]));
        expect(
          unknownFields(spec.body as z.core.$ZodType, value, ['body']),
          `${spec.method} ${spec.path}`,
        ).toEqual([]);
      }
    }
  });
});

describe('the OpenAPI document', () => {
  it('says additionalProperties: false on every request body object', async () => {
    const res = await server.call('GET', '/openapi.json', { key: null });
    expect(res.status).toBe(200);
    const doc = res.body.data ?? res.body;
    let objects = 0;
    const open: string[] = [];
    const walk = (node: unknown, where: string) => {
      if (!node || typeof node !== 'object') return;
      const n = node as Record<string, unknown>;
      if (n.type === 'object' && n.properties) {
        objects++;
        if (n.additionalProperties !== false) open.push(where);
      }
      for (const [k, v] of Object.entries(n)) walk(v, `${where}/${k}`);
    };
    for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, any>>))
      for (const [method, op] of Object.entries(ops))
        if (op.requestBody) walk(op.requestBody.content['application/json'].schema, `${method} ${path}`);
    expect(objects).toBeGreaterThan(25);
    expect(open).toEqual([]);
  });
});

function buildDoc() {
  // The document the server serves is built from the same registry.
  return buildOpenApi(allEndpoints, 'http://x/v1') as unknown as {
    paths: Record<string, Record<string, any>>;
  };
}

function topLevelPropertySets(schema: Record<string, any>): string[][] {
  if (schema.properties) return [Object.keys(schema.properties)];
  const options = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(options)) return options.flatMap((o: Record<string, any>) => topLevelPropertySets(o));
  return [];
}
