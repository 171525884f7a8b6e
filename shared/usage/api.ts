import * as z from 'zod';
import { endpoint, once } from '../http/endpoint';
import { PageQuery } from '../http/schemas';

export const UsageRecord = once(() =>
  z.object({
    id: z.string(),
    orgId: z.string(),
    userId: z.string(),
    model: z.string(),
    promptTokens: z.number().int(),
    completionTokens: z.number().int(),
    costCents: z.number().describe('US cents, fractional allowed'),
    feature: z.enum(['chat', 'schema_summary', 'auto_annotation', 'schema_embedding', 'chat_embedding']),
    createdAt: z.string(),
  }),
);

export const Budget = once(() =>
  z.object({
    remaining: z.number().describe('Non-expiring individual balance in US cents (fractional allowed)'),
    currency: z.literal('USD'),
    expires: z.literal(false),
    periodStart: z.null(),
    periodEnd: z.null(),
  }),
);

const UserFilter = z.object({
  userId: z
    .string()
    .min(1)
    .max(100)
    .optional()
    .describe('Admins only: another user of the organization (default: the calling user)'),
});

export const listUsage = endpoint({
  method: 'GET',
  path: '/usage',
  tag: 'Usage',
  summary: 'List usage records of the calling user (one per model call), newest first',
  scope: 'usage',
  query: PageQuery.extend(UserFilter.shape),
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
