import * as z from 'zod/mini';
import { QueryResult } from '../connections/schemas';
import { endpoint, once } from '../http/endpoint';
import { Deleted, describe, IdParams, PageQuery } from '../http/schemas';
import { PARAM_TYPES } from './values';

export const MAX_PARAMETERS = 50;

const Name = z.string().check(z.trim(), z.minLength(1), z.maxLength(120));
const Description = z.nullable(z.string().check(z.maxLength(2000)));
const Query = z.string().check(z.minLength(1), z.maxLength(100_000));
const ConnectionId = z.string().check(z.minLength(1), z.maxLength(200));

/** A JSON array given as an array or as a string holding one (the interface's `parameters` is a string). */
const jsonArray = <T extends z.ZodMiniType>(item: T, max: number) =>
  z.pipe(
    z.transform((v, ctx) => {
      if (typeof v !== 'string') return v;
      try {
        return JSON.parse(v);
      } catch {
        // zod/mini's transform context has no addIssue: the issue goes on the list it would have added it to.
        ctx.issues.push({
          code: 'custom',
          message: 'must be a JSON array (or a string holding one)',
          input: v,
        });
        return z.NEVER;
      }
    }),
    z.array(item).check(z.maxLength(max)),
  );

export const ParamDefInput = z.object({
  name: z
    .string()
    .check(
      z.regex(
        /^[A-Za-z_][A-Za-z0-9_]{0,62}$/,
        'must be letters, digits and underscores, not starting with a digit',
      ),
    ),
  type: z.enum(PARAM_TYPES),
  required: z._default(z.boolean(), false),
  default: z.optional(z.union([z.string(), z.number(), z.boolean(), z.null()])),
});

const Parameters = describe(
  jsonArray(ParamDefInput, MAX_PARAMETERS),
  'Parameter definitions {name, type, required, default} for the {{name}} placeholders; an array or a string holding the JSON array',
);

/** Tags as a string, or an array of strings stored comma-separated. */
const Tags = z.nullable(
  z.union([
    z.string().check(z.maxLength(500)),
    z.pipe(
      z
        .array(
          z
            .string()
            .check(
              z.trim(),
              z.minLength(1),
              z.maxLength(60),
              z.regex(/^[^,]+$/, 'a tag cannot contain a comma'),
            ),
        )
        .check(z.maxLength(30)),
      z.transform((a) => a.join(',')),
    ),
  ]),
);

export const SavedQueryCreate = z.object({
  name: Name,
  query: Query,
  connectionId: ConnectionId,
  description: z.optional(Description),
  parameters: z._default(Parameters, []),
  tags: z.optional(Tags),
  isPublic: z._default(z.boolean(), true),
});
export const SavedQueryUpdate = z.object({
  name: z.optional(Name),
  query: z.optional(Query),
  connectionId: z.optional(ConnectionId),
  description: z.optional(Description),
  parameters: z.optional(Parameters),
  tags: z.optional(Tags),
  isPublic: z.optional(z.boolean()),
});
export const SavedQueryRun = z.object({
  params: z._default(z.record(z.string(), z.unknown()), {}),
  maxRows: z.optional(z.number().check(z.int(), z.gte(1), z.lte(10_000))),
});
export const SavedQueryListQuery = z.extend(PageQuery, {
  connectionId: z.optional(z.string().check(z.minLength(1), z.maxLength(200))),
  tags: describe(
    z.optional(z.string().check(z.minLength(1), z.maxLength(200))),
    'Substring of the tags (case-insensitive)',
  ),
});

export const SavedQuery = once(() =>
  z.object({
    id: z.string(),
    orgId: z.string(),
    connectionId: z.string(),
    name: z.string(),
    description: z.nullable(z.string()),
    query: z.string(),
    parameters: describe(z.string(), 'JSON array of {name, type, required, default}'),
    tags: z.nullable(z.string()),
    isPublic: z.boolean(),
    createdBy: describe(z.string(), 'The user who saved it: that user and admins may change or delete it'),
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
