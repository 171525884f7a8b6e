import * as z from 'zod/mini';
import type { EndpointSpec } from './endpoint';
import examples from './openapi-examples.json' with { type: 'json' };
import {
  ERROR_CODES,
  errorCodes,
  OPERATION_DESCRIPTIONS,
  operationKey,
  RESOURCE_SCHEMAS,
  TAG_DESCRIPTIONS,
} from './openapi-reference';
import { closeObjects } from './strict';

type Examples = Record<string, { request?: unknown; responses: Record<string, Record<string, unknown>> }>;
const recorded = examples as Examples;

/** Request schemas (`io: 'input'`) are strict: every object says `additionalProperties: false`. */
const jsonSchema = (s: z.core.$ZodType, io: 'input' | 'output') => {
  const out = z.toJSONSchema(s, {
    target: 'draft-2020-12',
    io,
    unrepresentable: 'any',
    ...(io === 'input' ? { override: closeObjects } : {}),
  }) as Record<string, unknown>;
  delete out.$schema;
  return out;
};

const errorEnvelope = {
  type: 'object',
  required: ['data', 'error', 'meta'],
  properties: {
    data: { type: 'null' },
    error: {
      type: 'object',
      required: ['code', 'message'],
      properties: { code: { type: 'string' }, message: { type: 'string' }, details: {} },
    },
    meta: { $ref: '#/components/schemas/Meta' },
  },
};

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad request or validation error',
  401: 'Missing, invalid or expired API key',
  402: 'Credits exhausted',
  403: 'Scope or role missing',
  404: 'Not found',
  405: 'Method not allowed',
  409: 'Conflict',
  412: 'Precondition failed',
  413: 'Payload too large',
  422: 'Unprocessable',
  428: 'Precondition required',
  429: 'Rate limited',
  500: 'Internal error',
  502: 'Upstream error',
  503: 'Service unavailable or not configured',
  504: 'Timed out',
};

/** The codes of an operation per error status: the reference table, the spec's statuses, what tests saw. */
function errorsOf(spec: EndpointSpec): Map<number, string[]> {
  const out = errorCodes(spec);
  const seen = recorded[operationKey(spec)]?.responses ?? {};
  const add = (status: number, codes: string[]) =>
    out.set(status, [...new Set([...(out.get(status) ?? []), ...codes])].sort());
  for (const status of spec.errors ?? [])
    if (!out.has(status))
      add(
        status,
        Object.entries(ERROR_CODES)
          .filter(([, c]) => c.status === status)
          .map(([code]) => code),
      );
  for (const [status, byCode] of Object.entries(seen))
    if (Number(status) >= 400) add(Number(status), Object.keys(byCode));
  return new Map([...out].sort(([a], [b]) => a - b));
}

const exampleValues = (byName: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(byName).map(([name, value]) => [name, { value }]));

function describeOperation(spec: EndpointSpec): string {
  const lines: string[] = [];
  const what = OPERATION_DESCRIPTIONS[operationKey(spec)];
  if (what) lines.push(what);
  if (spec.auth === 'none') lines.push('No API key needed.');
  else {
    const who = spec.scope ? `a key with the \`${spec.scope}\` scope` : 'any valid key';
    lines.push(`Needs ${who}${spec.admin ? ' whose user is an admin' : ''}.`);
  }
  if (spec.ai) lines.push('Calls the model: counts against the AI rate limit and is charged to the caller.');
  if (spec.paginated)
    lines.push('Paginated with `page` (from 1) and `pageSize`; `meta.pagination` gives the totals.');
  if (spec.status && spec.status !== 200) lines.push(`Answers ${spec.status} on success.`);
  return lines.join('\n\n');
}

/** The OpenAPI 3.1 document, generated from the same zod schemas that validate requests. */
export function buildOpenApi(specs: EndpointSpec[], serverUrl: string) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const spec of specs) {
    const params: unknown[] = [];
    const addParams = (schema: z.core.$ZodObject | undefined, where: 'path' | 'query') => {
      if (!schema) return;
      const js = jsonSchema(schema, 'input') as { properties?: Record<string, unknown>; required?: string[] };
      for (const [name, s] of Object.entries(js.properties ?? {}))
        params.push({
          name,
          in: where,
          required: where === 'path' || (js.required ?? []).includes(name),
          schema: s,
        });
    };
    addParams(spec.params, 'path');
    addParams(spec.query, 'query');
    const status = spec.status ?? 200;
    const response = typeof spec.response === 'function' ? spec.response() : spec.response;
    const dataSchema = response ? jsonSchema(response, 'output') : {};
    const responses: Record<string, unknown> = {
      [String(status)]: {
        description: 'Success',
        content: {
          'application/json': {
            schema: {
              type: 'object',
              required: ['data', 'error', 'meta'],
              properties: {
                data: dataSchema,
                error: { type: 'null' },
                meta: { $ref: '#/components/schemas/Meta' },
              },
            },
          },
        },
      },
    };
    const seen = recorded[operationKey(spec)];
    const success = seen?.responses[String(status)]?.success;
    if (success !== undefined)
      (responses[String(status)] as { content: Record<string, Record<string, unknown>> }).content[
        'application/json'
      ].examples = exampleValues({ success });
    for (const [code, codes] of errorsOf(spec)) {
      const shown = Object.fromEntries(
        Object.entries(seen?.responses[String(code)] ?? {}).filter(([c]) => codes.includes(c)),
      );
      responses[String(code)] = {
        description: [
          `${STATUS_TEXT[code] ?? 'Error'}. \`error.code\` is one of:`,
          ...codes.map((c) => `- \`${c}\`: ${ERROR_CODES[c]?.when ?? ''}`),
        ].join('\n'),
        content: {
          'application/json': {
            schema: {
              allOf: [
                { $ref: '#/components/schemas/ErrorEnvelope' },
                {
                  type: 'object',
                  properties: { error: { type: 'object', properties: { code: { enum: codes } } } },
                },
              ],
            },
            ...(Object.keys(shown).length ? { examples: exampleValues(shown) } : {}),
          },
        },
      };
    }
    const op: Record<string, unknown> = {
      operationId: operationId(spec.method, spec.path),
      summary: spec.summary,
      description: describeOperation(spec),
      tags: [spec.tag],
      parameters: params,
      responses,
      security: spec.auth === 'none' ? [] : [{ bearerAuth: [] }],
    };
    if (spec.body)
      op.requestBody = {
        required: !spec.bodyOptional,
        content: {
          'application/json': {
            schema: jsonSchema(spec.body, 'input'),
            ...(seen?.request !== undefined ? { examples: exampleValues({ request: seen.request }) } : {}),
          },
        },
      };
    paths[spec.path] ??= {};
    paths[spec.path][spec.method.toLowerCase()] = op;
  }
  const resources = nameResources(specs, paths);
  const tags = [...new Set(specs.map((s) => s.tag))].map((name) => ({
    name,
    ...(TAG_DESCRIPTIONS[name] ? { description: TAG_DESCRIPTIONS[name] } : {}),
  }));
  return {
    openapi: '3.1.0',
    info: {
      title: 'Loupe API',
      version: '1.0.0',
      description:
        'Connect databases, ask questions in plain language, run safe SQL, and keep dashboards, saved queries and metrics.',
    },
    servers: [{ url: serverUrl }],
    tags,
    paths,
    components: {
      securitySchemes: {
        bearerAuth: { type: 'http', scheme: 'bearer', description: 'A Loupe API key (lp_…)' },
      },
      schemas: {
        Meta: {
          type: 'object',
          required: ['requestId', 'timestamp'],
          properties: {
            requestId: { type: 'string', format: 'uuid' },
            timestamp: { type: 'string', format: 'date-time' },
            pagination: {
              type: 'object',
              required: ['total', 'page', 'pageSize', 'totalPages'],
              properties: {
                total: { type: 'integer' },
                page: { type: 'integer' },
                pageSize: { type: 'integer' },
                totalPages: { type: 'integer' },
              },
            },
          },
        },
        ErrorEnvelope: errorEnvelope,
        ...resources,
      },
    },
  };
}

/**
 * The resources' schemas as named components (RESOURCE_SCHEMAS): each is taken from its operation's
 * success `data` (a list's item for paginated lists), and every identical schema object anywhere in the
 * paths is replaced by a reference to it.
 */
function nameResources(specs: EndpointSpec[], paths: Record<string, Record<string, any>>) {
  const named = new Map<string, string>(); // schema JSON → component name
  const components: Record<string, unknown> = {};
  for (const spec of specs) {
    const name = RESOURCE_SCHEMAS[operationKey(spec)];
    if (!name) continue;
    const op = paths[spec.path]?.[spec.method.toLowerCase()];
    const ok = op?.responses?.[String(spec.status ?? 200)]?.content?.['application/json']?.schema;
    let data = ok?.properties?.data;
    if (data?.type === 'array' && data.items) data = data.items;
    if (!data || typeof data !== 'object' || !Object.keys(data).length) continue;
    const key = JSON.stringify(data);
    if (named.has(key)) continue;
    named.set(key, name);
    components[name] = JSON.parse(key);
  }
  const refer = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(refer);
    if (!node || typeof node !== 'object') return node;
    const name = named.get(JSON.stringify(node));
    if (name) return { $ref: `#/components/schemas/${name}` };
    return Object.fromEntries(
      Object.entries(node).map(([k, v]) => [k, k === 'examples' || k === 'example' ? v : refer(v)]),
    );
  };
  for (const ops of Object.values(paths))
    for (const [method, op] of Object.entries(ops)) ops[method] = refer(op) as Record<string, unknown>;
  return components;
}

/** `GET /connections/{id}/schema` → `getConnectionsIdSchema`; `GET /` → `getRoot`. */
function operationId(method: string, path: string): string {
  const words = path.split(/[^A-Za-z0-9]+/).filter(Boolean);
  const tail = words.map((w) => w[0].toUpperCase() + w.slice(1)).join('') || 'Root';
  return method.toLowerCase() + tail;
}
