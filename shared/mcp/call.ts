import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import * as z from 'zod/mini';
import { hasScope } from '../auth/authenticate';
import { type AuthContext, isAdmin } from '../auth/context';
import { hitSharedLimit } from '../http/rate-limit';
import { config } from '../platform/config';
import { type AppError, forbidden, internalError, isAppError, validationError } from '../platform/errors';
import { logger } from '../platform/logger';
import { prebuiltListing } from './listing';
import { portable } from './portable';
import { type ToolDef, type ToolRequest, tools } from './tools';

type Json = Record<string, unknown>;

const jsonSchema = (s: z.core.$ZodType, io: 'input' | 'output') => {
  const out = z.toJSONSchema(s, { target: 'draft-2020-12', io, unrepresentable: 'any' }) as Json;
  delete out.$schema;
  return portable(out) as Json;
};

/** Output objects stay open to fields added later (a validating client must not reject a newer server). */
function open(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(open);
  if (!schema || typeof schema !== 'object') return schema;
  const out: Json = {};
  for (const [k, v] of Object.entries(schema))
    if (!(k === 'additionalProperties' && v === false)) out[k] = open(v);
  return out;
}

/** What a refused or failed call carries in its structured content (the REST error body). */
const ErrorOutput = {
  type: 'object',
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      required: ['code', 'message'],
      properties: { code: { type: 'string' }, message: { type: 'string' }, details: {} },
    },
  },
};

const shapeOf = (s: unknown): Record<string, z.core.$ZodType> =>
  ((s as { shape?: Record<string, z.core.$ZodType> } | undefined)?.shape ?? {}) as Record<
    string,
    z.core.$ZodType
  >;

/** The tool's input schema: the REST request fields it maps, with their REST schemas, and its own arguments. */
function inputSchema(def: ToolDef): Tool['inputSchema'] {
  const shape: Record<string, z.core.$ZodType> = {};
  for (const [name, [part, field]] of Object.entries(def.args)) {
    const s = shapeOf(def.endpoint[part])[field];
    if (!s) throw new Error(`${def.name}: ${def.endpoint.path} has no ${part} field ${field}`);
    shape[name] = s;
  }
  Object.assign(shape, shapeOf(def.own));
  const js = jsonSchema(z.object(shape), 'input') as Json & { required?: string[] };
  const required = [...new Set([...(js.required ?? []), ...(def.required ?? [])])];
  return {
    ...js,
    type: 'object',
    ...(required.length ? { required } : {}),
    additionalProperties: false,
  } as Tool['inputSchema'];
}

/** The tools/list entry of every tool, from the zod schemas (see listing.ts for when this runs). */
export function buildListings(): Tool[] {
  return tools.map(
    (def) =>
      ({
        name: def.name,
        title: def.title,
        description: def.description,
        inputSchema: inputSchema(def),
        outputSchema: portable({
          type: 'object',
          anyOf: [open(jsonSchema(def.output(), 'output')), ErrorOutput],
        }) as Tool['outputSchema'],
        annotations: {
          title: def.title,
          readOnlyHint: def.readOnly,
          ...(def.readOnly ? {} : { destructiveHint: false, idempotentHint: false }),
          openWorldHint: false,
        },
      }) satisfies Tool,
  );
}

let listing: Map<string, Tool> | undefined;

function toolListings(): Map<string, Tool> {
  listing ??= new Map((prebuiltListing ?? buildListings()).map((t) => [t.name, t]));
  return listing;
}

/** Whether the caller may call the tool at all: the REST operation's scope and admin rule. */
function refusal(ctx: AuthContext, def: ToolDef): AppError | undefined {
  const spec = def.endpoint;
  if (spec.scope && !hasScope(ctx, spec.scope))
    return forbidden(`This API key lacks the "${spec.scope}" scope required for this operation.`);
  if (spec.admin && !isAdmin(ctx)) return forbidden('This operation requires an admin.');
  return undefined;
}

/** The tools this caller's key may call (tools/list). */
export function visibleTools(ctx: AuthContext): Tool[] {
  const all = toolListings();
  return tools.filter((def) => !refusal(ctx, def)).map((def) => all.get(def.name)!);
}

type Issue = { path: string; message: string; code: string };

/**
 * Validates the arguments exactly as the REST route validates its request: each mapped argument is put
 * where the REST request carries it and checked with that operation's schemas; issues are reported under
 * the tool's argument names. Unknown arguments are refused.
 */
export function validateArgs(def: ToolDef, args: unknown): ToolRequest {
  const issues: Issue[] = [];
  const a = (args ?? {}) as Json;
  if (typeof a !== 'object' || Array.isArray(a))
    throw validationError('Invalid arguments: arguments must be an object.', {
      issues: [{ path: '', message: 'must be an object', code: 'invalid_type' }],
    });
  const ownShape = shapeOf(def.own);
  for (const k of Object.keys(a))
    if (!(k in def.args) && !(k in ownShape))
      issues.push({
        path: k,
        message: def.renamed?.[k] ? `Renamed: use "${def.renamed[k]}"` : 'Unknown argument',
        code: 'unrecognized_keys',
      });
  for (const r of def.required ?? [])
    if (a[r] === undefined || a[r] === null)
      issues.push({ path: r, message: 'Required', code: 'invalid_type' });
  const raw: Record<'params' | 'query' | 'body', Json> = {
    params: { ...def.fixed?.params },
    query: { ...def.fixed?.query },
    body: { ...def.fixed?.body },
  };
  const back = new Map<string, string>();
  for (const [name, [part, field]] of Object.entries(def.args)) {
    back.set(`${part}.${field}`, name);
    if (a[name] !== undefined) raw[part][field] = a[name];
  }
  const check = (part: string, schema: z.core.$ZodType | undefined, value: Json) => {
    if (!schema) return value;
    const r = z.safeParse(schema, value);
    if (r.success) return r.data;
    for (const i of r.error.issues) {
      const [first, ...rest] = i.path.map(String);
      const name = part === 'own' ? first : (back.get(`${part}.${first}`) ?? first);
      if (issues.some((x) => x.path === name && x.code === 'invalid_type' && x.message === 'Required'))
        continue;
      issues.push({
        path: [name, ...rest].filter((p) => p !== undefined).join('.'),
        message: i.message,
        code: i.code,
      });
    }
    return undefined;
  };
  const spec = def.endpoint;
  const out: ToolRequest = {
    params: check('params', spec.params, raw.params),
    query: check('query', spec.query, raw.query),
    body: check('body', spec.body, raw.body),
    own: def.own
      ? check('own', def.own, Object.fromEntries(Object.keys(ownShape).map((k) => [k, a[k]])))
      : {},
  };
  if (issues.length)
    throw validationError(
      `Invalid arguments: ${issues.map((i) => (i.path ? `${i.path}: ${i.message}` : i.message)).join('; ')}`,
      { issues },
    );
  return out;
}

function errorResult(e: unknown): CallToolResult {
  let err: AppError;
  if (isAppError(e)) err = e;
  else {
    logger().error('MCP tool failed unexpectedly', {
      error: e instanceof Error ? { name: e.name, message: e.message, stack: e.stack } : String(e),
    });
    err = internalError();
  }
  const retry = (err.details as { retryAfterSeconds?: number } | undefined)?.retryAfterSeconds;
  return {
    isError: true,
    content: [
      {
        type: 'text',
        text: `${err.code}: ${err.message}${retry !== undefined ? ` Retry after ${retry} s.` : ''}`,
      },
    ],
    structuredContent: {
      error: {
        code: err.code,
        message: err.message,
        ...(err.details !== undefined ? { details: err.details } : {}),
      },
    },
  };
}

/**
 * tools/call for a known tool, in the REST pipeline's order: scope and role (403), the organization's
 * rate limit for this request (`limited`, counted when the request was authenticated) and the AI limit,
 * argument validation (400), the use case. Every refusal or failure is a result with isError.
 */
export async function callTool(
  ctx: AuthContext,
  def: ToolDef,
  args: unknown,
  limited: AppError | undefined,
): Promise<CallToolResult> {
  try {
    const refused = refusal(ctx, def);
    if (refused) throw refused;
    if (limited) throw limited;
    if (def.endpoint.ai) await hitSharedLimit(ctx.orgId, 'ai', config().LOUPE_AI_RATE_LIMIT);
    const data = await def.run(ctx, validateArgs(def, args));
    return { content: [{ type: 'text', text: def.text(data) }], structuredContent: data };
  } catch (e) {
    return errorResult(e);
  }
}
