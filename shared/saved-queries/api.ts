import * as z from 'zod';
import { QueryResult } from '../connections/schemas';
import { endpoint, once } from '../http/endpoint';
import { Deleted, IdParams, PageQuery } from '../http/schemas';
import { PARAM_TYPES } from './values';

export const MAX_PARAMETERS = 50;

const Name = z.string().trim().min(1).max(120);
const Description = z.string().max(2000).nullable();
const Query = z.string().min(1).max(100_000);
const ConnectionId = z.string().min(1).max(200);

/** A JSON array given as an array or as a string holding one (the interface's `parameters` is a string). */
const jsonArray = <T extends z.ZodType>(item: T, max: number) =>
  z.preprocess((v, ctx) => {
    if (typeof v !== 'string') return v;
    try {
      return JSON.parse(v);
    } catch {
      ctx.addIssue({ code: 'custom', message: 'must be a JSON array (or a string holding one)', input: v });
      return z.NEVER;
    }
  }, z.array(item).max(max));

export const ParamDefInput = z.object({
  name: z
    .string()
    .regex(
      /^[A-Za-z_][A-Za-z0-9_]{0,62}$/,
      'must be letters, digits and underscores, not starting with a digit',
    ),
  type: z.enum(PARAM_TYPES),
  required: z.boolean().default(false),
  default: z.union([z.string(), z.number(), z.boolean(), z.null()]).optional(),
});

const Parameters = jsonArray(ParamDefInput, MAX_PARAMETERS).describe(
  'Parameter definitions {name, type, required, default} for the {{name}} placeholders; an array or a string holding the JSON array',
);

/** Tags as a string, or an array of strings stored comma-separated. */
const Tags = z
  .union([
    z.string().max(500),
    z
      .array(
        z
          .string()
          .trim()
          .min(1)
          .max(60)
          .regex(/^[^,]+$/, 'a tag cannot contain a comma'),
      )
      .max(30)
      .transform((a) => a.join(',')),
  ])
  .nullable();

export const SavedQueryCreate = z.object({
  name: Name,
  query: Query,
  connectionId: ConnectionId,
  description: Description.optional(),
  parameters: Parameters.default([]),
  tags: Tags.optional(),
  isPublic: z.boolean().default(true),
});
export const SavedQueryUpdate = z.object({
  name: Name.optional(),
  query: Query.optional(),
  connectionId: ConnectionId.optional(),
  description: Description.optional(),
  parameters: Parameters.optional(),
  tags: Tags.optional(),
  isPublic: z.boolean().optional(),
});
export const SavedQueryRun = z.object({
  params: z.record(z.string(), z.unknown()).default({}),
  maxRows: z.number().int().min(1).max(10_000).optional(),
});
export const SavedQueryListQuery = PageQuery.extend({
  connectionId: z.string().min(1).max(200).optional(),
  tags: z.string().min(1).max(200).optional().describe('Substring of the tags (case-insensitive)'),
});

export const SavedQuery = once(() =>
  z.object({
    id: z.string(),
    orgId: z.string(),
    connectionId: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    query: z.string(),
    parameters: z.string().describe('JSON array of {name, type, required, default}'),
    tags: z.string().nullable(),
    isPublic: z.boolean(),
    createdAt: z.string(),
    updatedAt: z.string(),
  }),
);
const tag = 'Saved queries';
const scope = 'query' as const;

export const listSavedQueries = endpoint({
  method: 'GET',
  path: '/saved-queries',
  tag,
  scope,
  summary: 'List saved queries (filters: connectionId, tags substring)',
  query: SavedQueryListQuery,
  response: () => z.array(SavedQuery()),
  paginated: true,
});
export const createSavedQuery = endpoint({
  method: 'POST',
  path: '/saved-queries',
  tag,
  scope,
  summary: 'Save a parameterized query ({{name}} placeholders, bound as driver parameters)',
  body: SavedQueryCreate,
  status: 201,
  response: SavedQuery,
  errors: [404, 409],
});
export const getSavedQuery = endpoint({
  method: 'GET',
  path: '/saved-queries/{id}',
  tag,
  scope,
  summary: 'Get a saved query',
  params: IdParams,
  response: SavedQuery,
});
export const updateSavedQuery = endpoint({
  method: 'PATCH',
  path: '/saved-queries/{id}',
  tag,
  scope,
  summary: 'Change a saved query',
  params: IdParams,
  body: SavedQueryUpdate,
  response: SavedQuery,
  errors: [403, 409],
});
export const deleteSavedQuery = endpoint({
  method: 'DELETE',
  path: '/saved-queries/{id}',
  tag,
  scope,
  summary: 'Delete a saved query',
  params: IdParams,
  response: Deleted,
  errors: [403],
});
export const runSavedQuery = endpoint({
  method: 'POST',
  path: '/saved-queries/{id}/run',
  tag,
  scope,
  summary: 'Run a saved query read-only with the given parameter values',
  params: IdParams,
  body: SavedQueryRun,
  bodyOptional: true,
  response: QueryResult,
  errors: [422, 504],
});

export const savedQueryEndpoints = [
  listSavedQueries,
  createSavedQuery,
  getSavedQuery,
  updateSavedQuery,
  deleteSavedQuery,
  runSavedQuery,
];
