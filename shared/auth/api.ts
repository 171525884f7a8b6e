import * as z from 'zod/mini';
import { endpoint, once, SCOPES } from '../http/endpoint';
import { Deleted, describe, IdParams, isoDateTime, PageQuery } from '../http/schemas';

const ScopeValue = z.enum(['*', ...SCOPES]);

export const ApiKeyCreate = z.object({
  name: z.string().check(z.trim(), z.minLength(1), z.maxLength(120)),
  scopes: z._default(z.array(ScopeValue).check(z.minLength(1), z.maxLength(SCOPES.length + 1)), ['*']),
  expiresAt: z.optional(z.nullable(isoDateTime())),
});

export const ApiKey = once(() =>
  z.object({
    id: z.string(),
    keyPrefix: z.string(),
    name: z.string(),
    scopes: describe(z.string(), 'JSON array of scopes'),
    userId: z.string(),
    lastUsedAt: z.nullable(z.string()),
    createdAt: z.string(),
    expiresAt: z.nullable(z.string()),
  }),
);
export const ApiKeyCreated = once(() =>
  z.extend(ApiKey(), { key: describe(z.string(), 'The full key, shown only once') }),
);

export const MemberCreate = z.object({
  email: z.email().check(z.maxLength(320)),
  name: z.string().check(z.trim(), z.minLength(1), z.maxLength(200)),
  role: z._default(z.enum(['admin', 'member']), 'member'),
  connectionIds: z._default(
    z.array(z.string().check(z.minLength(1), z.maxLength(100))).check(z.maxLength(1000)),
    [],
  ),
});
export const MemberUpdate = z.partial(
  z.object({
    name: z.string().check(z.trim(), z.minLength(1), z.maxLength(200)),
    role: z.enum(['admin', 'member']),
    connectionIds: z.array(z.string().check(z.minLength(1), z.maxLength(100))).check(z.maxLength(1000)),
  }),
);
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
  response: () => z.extend(Deleted, { revoked: z.literal(true) }),
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
