import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allEndpoints } from '../../functions/endpoints';
import {
  ERROR_CODES,
  OPERATION_DESCRIPTIONS,
  OPERATION_ERRORS,
  operationKey,
  RESOURCE_SCHEMAS,
  TAG_DESCRIPTIONS,
} from '../../shared/http/openapi-reference';
import { startTestServer, type TestServer } from '../support/server';

/**
 * The API reference: every example in the OpenAPI document (recorded from real answers, see
 * infra/openapi-examples.ts) validates against the schema it illustrates; every operation shows a
 * success example and its request; every error status lists the codes it can carry; the AI operation
 * declares 502 and 504. Live answers of a few calls are validated against the same schemas.
 */
const METHODS = ['get', 'post', 'put', 'patch', 'delete'];
let s: TestServer;
let doc: any;
let ajv: Ajv2020;

/** A JSON pointer into the document, for ajv's `$ref`. */
const pointer = (...parts: string[]) =>
  `openapi#/${parts.map((p) => p.replaceAll('~', '~0').replaceAll('/', '~1')).join('/')}`;

function operations(): { path: string; method: string; op: any }[] {
  return Object.entries(doc.paths).flatMap(([path, ops]: [string, any]) =>
    METHODS.filter((m) => ops[m]).map((method) => ({ path, method, op: ops[method] })),
  );
}

function check(schemaRef: string, value: unknown): string[] {
  const validate = ajv.getSchema(schemaRef) ?? ajv.compile({ $ref: schemaRef });
  if (validate(value)) return [];
  return (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message} ${JSON.stringify(e.params)}`);
}

beforeAll(async () => {
  s = await startTestServer();
  doc = await (await fetch(`${s.url}/openapi.json`)).json();
  ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
  ajv.addFormat('uuid', /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i);
  ajv.addFormat('date-time', (v: string) => !Number.isNaN(Date.parse(v)) && /^\d{4}-\d\d-\d\dT/.test(v));
  ajv.addFormat('date', /^\d{4}-\d\d-\d\d$/);
  ajv.addFormat('email', /^[^\s@]+@[^\s@]+$/);
  ajv.addFormat('uri', (v: string) => URL.canParse(v));
  ajv.addSchema(doc, 'openapi');
});
afterAll(() => s?.stop());

describe('the OpenAPI document as a reference', () => {
  it('every request and response example validates against its schema', () => {
    const problems: string[] = [];
    let checked = 0;
    for (const { path, method, op } of operations()) {
      const body = op.requestBody?.content?.['application/json'];
      for (const [name, ex] of Object.entries<any>(body?.examples ?? {})) {
        checked++;
        for (const p of check(
          pointer('paths', path, method, 'requestBody', 'content', 'application/json', 'schema'),
          ex.value,
        ))
          problems.push(`${method.toUpperCase()} ${path} request ${name}: ${p}`);
      }
      for (const [status, res] of Object.entries<any>(op.responses)) {
        const media = res.content?.['application/json'];
        for (const [name, ex] of Object.entries<any>(media?.examples ?? {})) {
          checked++;
          for (const p of check(
            pointer('paths', path, method, 'responses', status, 'content', 'application/json', 'schema'),
            ex.value,
          ))
            problems.push(`${method.toUpperCase()} ${path} ${status} ${name}: ${p}`);
        }
      }
    }
    expect(problems).toEqual([]);
    expect(checked).toBeGreaterThan(250);
  });

  it('a wrong example would be caught: a success envelope is not an error, a code outside the enum is refused', () => {
    const chat = (status: string) =>
      pointer('paths', '/chat', 'post', 'responses', status, 'content', 'application/json', 'schema');
    const error = (code: string) => ({
      data: null,
      error: { code, message: 'x' },
      meta: { requestId: crypto.randomUUID(), timestamp: new Date().toISOString() },
    });
    expect(check(chat('504'), error('AI_PROVIDER_TIMEOUT'))).toEqual([]);
    expect(check(chat('504'), error('QUERY_TIMEOUT'))).not.toEqual([]);
    expect(check(chat('200'), error('AI_PROVIDER_TIMEOUT'))).not.toEqual([]);
  });

  it('every operation has a description, a success example, its request example, and codes on every error', () => {
    const missing: string[] = [];
    for (const { path, method, op } of operations()) {
      const name = `${method.toUpperCase()} ${path}`;
      if (!op.description) missing.push(`${name}: no description`);
      const raw = path === '/openapi.json' || path === '/.well-known/oauth-protected-resource';
      const success = Object.entries<any>(op.responses).find(([st]) => Number(st) < 300)?.[1];
      if (!raw && !success?.content?.['application/json']?.examples)
        missing.push(`${name}: no success example`);
      if (op.requestBody && !op.requestBody.content['application/json'].examples)
        missing.push(`${name}: no request example`);
      for (const [status, res] of Object.entries<any>(op.responses)) {
        if (Number(status) < 400) continue;
        const codes =
          res.content['application/json'].schema.allOf?.[1]?.properties?.error?.properties?.code?.enum;
        if (!codes?.length) missing.push(`${name} ${status}: no error codes`);
        for (const c of codes ?? []) {
          if (!ERROR_CODES[c]) missing.push(`${name} ${status}: ${c} is not a known code`);
          else if (ERROR_CODES[c].status !== Number(status))
            missing.push(`${name} ${status}: ${c} belongs to ${ERROR_CODES[c].status}`);
        }
      }
    }
    expect(missing).toEqual([]);
  });

  it('the AI operation declares 402, 502, 503 and 504 with their codes', () => {
    const r = doc.paths['/chat'].post.responses;
    const codes = (st: string) =>
      r[st].content['application/json'].schema.allOf[1].properties.error.properties.code.enum;
    expect(codes('402')).toEqual(['CREDITS_EXHAUSTED']);
    expect(codes('502')).toEqual(['AI_PROVIDER_ERROR']);
    expect(codes('503')).toEqual(['AI_NOT_CONFIGURED', 'AI_PROVIDER_BUSY']);
    expect(codes('504')).toEqual(['AI_PROVIDER_TIMEOUT']);
  });

  it('every documented code is one the service really answers (it appears in the source)', () => {
    const source: string[] = [];
    const walk = (dir: string) => {
      for (const e of readdirSync(dir)) {
        const p = join(dir, e);
        if (statSync(p).isDirectory()) walk(p);
        else if (p.endsWith('.ts') && !p.endsWith('openapi-reference.ts'))
          source.push(readFileSync(p, 'utf8'));
      }
    };
    for (const d of ['shared', 'functions']) walk(join(import.meta.dirname, '..', '..', d));
    const all = source.join('\n');
    expect(Object.keys(ERROR_CODES).filter((c) => !all.includes(`'${c}'`))).toEqual([]);
  });

  it('the reference tables name only operations that exist', () => {
    const known = new Set(allEndpoints.map(operationKey));
    const tables = { OPERATION_DESCRIPTIONS, OPERATION_ERRORS, RESOURCE_SCHEMAS };
    const stale = Object.entries(tables).flatMap(([table, rows]) =>
      Object.keys(rows)
        .filter((k) => !known.has(k))
        .map((k) => `${table}: ${k}`),
    );
    expect(stale).toEqual([]);
    expect(doc.paths['/queries/{id}/approve'].post.description).toContain('never by its submitter');
  });

  it('tags are described and the resources are named components that the operations reference', () => {
    expect(doc.tags.filter((t: any) => !t.description)).toEqual([]);
    expect(doc.tags.map((t: any) => t.name).sort()).toEqual(Object.keys(TAG_DESCRIPTIONS).sort());
    const text = JSON.stringify(doc.paths);
    const names = Object.keys(doc.components.schemas).filter((n) => n !== 'Meta' && n !== 'ErrorEnvelope');
    expect(names.length).toBeGreaterThanOrEqual(25);
    expect(names.filter((n) => !text.includes(`"#/components/schemas/${n}"`))).toEqual([]);
  });

  it('live answers validate too (workflow credentials: create, list, rotate)', async () => {
    const schema = (path: string, method: string, status: number) =>
      pointer('paths', path, method, 'responses', String(status), 'content', 'application/json', 'schema');
    const created = await s.call('POST', '/workflow-credentials', {
      body: {
        name: 'Reference',
        kind: 'BEARER',
        allowedHosts: ['hooks.example.com'],
        config: { token: 'abc' },
      },
    });
    expect(created.status, created.text).toBe(201);
    expect(check(schema('/workflow-credentials', 'post', 201), created.body)).toEqual([]);
    const list = await s.call('GET', '/workflow-credentials');
    expect(check(schema('/workflow-credentials', 'get', 200), list.body)).toEqual([]);
    const rotated = await s.call('PATCH', `/workflow-credentials/${created.body.data.id}`, {
      body: { config: { token: 'def' } },
    });
    expect(rotated.status, rotated.text).toBe(200);
    expect(check(schema('/workflow-credentials/{id}', 'patch', 200), rotated.body)).toEqual([]);
    const conflict = await s.call('POST', '/workflow-credentials', {
      body: {
        name: 'reference ',
        kind: 'BEARER',
        allowedHosts: ['hooks.example.com'],
        config: { token: 'x' },
      },
    });
    expect(conflict.status).toBe(409);
    expect(check(schema('/workflow-credentials', 'post', 409), conflict.body)).toEqual([]);
  });

  it('the local server serves a reference page at /docs with the bundled renderer, no CDN, strict CSP', async () => {
    const root = s.url.replace(/\/v1$/, '');
    const page = await fetch(`${root}/docs`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toContain('text/html');
    const csp = page.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("connect-src 'self'");
    const html = await page.text();
    expect(html).toContain('data-url="/v1/openapi.json"');
    expect([...html.matchAll(/src="([^"]+)"/g)].map((m) => m[1])).toEqual(['/docs/scalar.js']);
    expect(html).not.toMatch(/https?:\/\//);
    const js = await fetch(`${root}/docs/scalar.js`);
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toContain('javascript');
    expect((await js.arrayBuffer()).byteLength).toBeGreaterThan(100_000);
    expect((await fetch(`${root}/docs/other.js`)).status).toBe(404);
  });
});
