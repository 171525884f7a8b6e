import * as z from 'zod/mini';
import { endpoint, once } from '../http/endpoint';
import { describe, PageQuery } from '../http/schemas';

export const UsageRecord = once(() =>
  z.object({
    id: z.string(),
    orgId: z.string(),
    userId: z.string(),
    model: z.string(),
    promptTokens: z.number().check(z.int()),
    completionTokens: z.number().check(z.int()),
    costCents: describe(z.number(), 'US cents, fractional allowed'),
    feature: z.enum(['chat', 'schema_summary', 'auto_annotation', 'schema_embedding', 'chat_embedding']),
    createdAt: z.string(),
  }),
);

export const Budget = once(() =>
  z.object({
    remaining: describe(z.number(), 'Non-expiring individual balance in US cents (fractional allowed)'),
    currency: z.literal('USD'),
    expires: z.literal(false),
    periodStart: z.null(),
    periodEnd: z.null(),
  }),
);

const UserFilter = z.object({
  userId: describe(
    z.optional(z.string().check(z.minLength(1), z.maxLength(100))),
    'Admins only: another user of the organization (default: the calling user)',
  ),
});

export const listUsage = endpoint({
  method: 'GET',
  path: '/usage',
  tag: 'Usage',
  summary: 'List usage records of the calling user (one per model call), newest first',
  scope: 'usage',
  query: z.extend(PageQuery, UserFilter.shape),
  response: () => z.array(UsageRecord()),
  paginated: true,
  errors: [403, 404],
});

export const getBudget = endpoint({
  method: 'GET',
  path: '/usage/budget',
  tag: 'Usage',
  summary: 'The calling user’s remaining balance in US cents',
  scope: 'usage',
  query: UserFilter,
  response: Budget,
  errors: [403, 404],
});

export const usageEndpoints = [listUsage, getBudget];
