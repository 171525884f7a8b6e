import * as z from 'zod/mini';
import type { EndpointSpec } from './endpoint';
import { closeObjects } from './strict';

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
  503: 'Service not configured',
  504: 'Timed out',
};

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
    const errors = new Set([
      400,
      429,
      500,
      ...(spec.auth === 'none' ? [] : [401, 403]),
      ...(spec.errors ?? []),
    ]);
    if (spec.params) errors.add(404);
    for (const code of [...errors].sort())
      responses[String(code)] = {
        description: STATUS_TEXT[code] ?? 'Error',
        content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorEnvelope' } } },
      };
    const op: Record<string, unknown> = {
      operationId: operationId(spec.method, spec.path),
      summary: spec.summary,
      tags: [spec.tag],
      parameters: params,
      responses,
      security: spec.auth === 'none' ? [] : [{ bearerAuth: [] }],
    };
    if (spec.body)
      op.requestBody = {
        required: !spec.bodyOptional,
        content: { 'application/json': { schema: jsonSchema(spec.body, 'input') } },
      };
    paths[spec.path] ??= {};
    paths[spec.path][spec.method.toLowerCase()] = op;
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Loupe API',
      version: '1.0.0',
      description:
        'Connect databases, ask questions in plain language, run safe SQL, and keep dashboards, saved queries and metrics.',
    },
    servers: [{ url: serverUrl }],
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
      },
    },
  };
}

/** `GET /connections/{id}/schema` → `getConnectionsIdSchema`; `GET /` → `getRoot`. */
function operationId(method: string, path: string): string {
  const words = path.split(/[^A-Za-z0-9]+/).filter(Boolean);
  const tail = words.map((w) => w[0].toUpperCase() + w.slice(1)).join('') || 'Root';
  return method.toLowerCase() + tail;
}
