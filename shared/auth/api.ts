import * as z from 'zod';
import { endpoint, once, SCOPES } from '../http/endpoint';
import { Deleted, IdParams, isoDateTime, PageQuery } from '../http/schemas';

const ScopeValue = z.enum(['*', ...SCOPES]);

export const ApiKeyCreate = z.object({
  name: z.string().trim().min(1).max(120),
  scopes: z
    .array(ScopeValue)
    .min(1)
    .max(SCOPES.length + 1)
    .default(['*']),
  expiresAt: isoDateTime().nullable().optional(),
});

export const ApiKey = once(() =>
  z.object({
    id: z.string(),
    keyPrefix: z.string(),
    name: z.string(),
    scopes: z.string().describe('JSON array of scopes'),
    userId: z.string(),
    lastUsedAt: z.string().nullable(),
    createdAt: z.string(),
    expiresAt: z.string().nullable(),
  }),
);
export const ApiKeyCreated = once(() =>
  ApiKey().extend({ key: z.string().describe('The full key, shown only once') }),
);

export const MemberCreate = z.object({
  email: z.email().max(320),
  name: z.string().trim().min(1).max(200),
  role: z.enum(['admin', 'member']).default('member'),
  connectionIds: z.array(z.string().min(1).max(100)).max(1000).default([]),
});
export const MemberUpdate = z
  .object({
    name: z.string().trim().min(1).max(200),
    role: z.enum(['admin', 'member']),
    connectionIds: z.array(z.string().min(1).max(100)).max(1000),
  })
  .partial();
export const Member = once(() =>
  z.object({
    id: z.string(),
    email: z.string(),
    name: z.string(),
    role: z.enum(['admin', 'member']),
    connectionIds: z.array(z.string()),
    createdAt: z.string(),
  }),
);

export const listKeys = endpoint({
  method: 'GET',
  path: '/keys',
  tag: 'Keys',
  summary: 'List active API keys of the organization',
  scope: 'admin',
  admin: true,
  query: PageQuery,
  response: () => z.array(ApiKey()),
  paginated: true,
});
export const createKey = endpoint({
  method: 'POST',
  path: '/keys',
  tag: 'Keys',
  summary: 'Create an API key for the calling user (full key shown once)',
  scope: 'admin',
  admin: true,
  body: ApiKeyCreate,
  status: 201,
  response: ApiKeyCreated,
});
export const revokeKey = endpoint({
  method: 'DELETE',
  path: '/keys/{id}',
  tag: 'Keys',
  summary: 'Revoke an API key',
  scope: 'admin',
  admin: true,
  params: IdParams,
  response: () => Deleted.extend({ revoked: z.literal(true) }),
});
export const listMembers = endpoint({
  method: 'GET',
  path: '/members',
  tag: 'Members',
  summary: 'List members of the organization',
  scope: 'admin',
  admin: true,
  query: PageQuery,
  response: () => z.array(Member()),
  paginated: true,
});
export const createMember = endpoint({
  method: 'POST',
  path: '/members',
  tag: 'Members',
  summary: 'Add a member',
  scope: 'admin',
  admin: true,
  body: MemberCreate,
  status: 201,
  response: Member,
  errors: [409],
});
export const getMember = endpoint({
  method: 'GET',
  path: '/members/{id}',
  tag: 'Members',
  summary: 'Get a member',
  scope: 'admin',
  admin: true,
  params: IdParams,
  response: Member,
});
export const updateMember = endpoint({
  method: 'PATCH',
  path: '/members/{id}',
  tag: 'Members',
  summary: 'Change a member’s name, role or assigned connections',
  scope: 'admin',
  admin: true,
  params: IdParams,
  body: MemberUpdate,
  response: Member,
});
export const deleteMember = endpoint({
  method: 'DELETE',
  path: '/members/{id}',
  tag: 'Members',
  summary: 'Remove a member and revoke its keys',
  scope: 'admin',
  admin: true,
  params: IdParams,
  response: Deleted,
});
export const createMemberKey = endpoint({
  method: 'POST',
  path: '/members/{id}/keys',
  tag: 'Members',
  summary: 'Issue an API key for a member (full key shown once)',
  scope: 'admin',
  admin: true,
  params: IdParams,
  body: ApiKeyCreate,
  status: 201,
  response: ApiKeyCreated,
});

export const authEndpoints = [
  listKeys,
  createKey,
  revokeKey,
  listMembers,
  createMember,
  getMember,
  updateMember,
  deleteMember,
  createMemberKey,
];
