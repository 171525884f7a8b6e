import type * as z from 'zod/mini';
import { connectionStore } from '../connections/store';
import { settled } from '../platform/after-answer';
import { config } from '../platform/config';
import { AppError, badRequest, forbidden, notFound, validationError } from '../platform/errors';
import type { ApiKeyCreate, MemberCreate, MemberUpdate } from './api';
import { KEY_USE_TOPIC } from './authenticate';
import type { AuthContext } from './context';
import { authStore, type KeyRecord, type User } from './store';

/** The public view of a key: never the hash, never the key. */
export function keyView(k: KeyRecord) {
  return {
    id: k.id,
    keyPrefix: k.keyPrefix,
    name: k.name,
    scopes: JSON.stringify(k.scopes),
    userId: k.userId,
    lastUsedAt: k.lastUsedAt ?? null,
    createdAt: k.createdAt,
    expiresAt: k.expiresAt ?? null,
  };
}

export function memberView(u: User) {
  return {
    id: u.id,
    email: u.email,
    name: u.name,
    role: u.role,
    connectionIds: u.connectionIds ?? [],
    createdAt: u.createdAt,
  };
}

/**
 * The organization's live keys. lastUsedAt is written alongside requests (authenticate.ts): this instance's
 * writes still under way finish first, so a key just used through this instance shows it.
 */
export async function listKeyViews(ctx: AuthContext) {
  await settled(KEY_USE_TOPIC, 1000);
  return (await authStore.listKeys(ctx.orgId)).map(keyView);
}

const holds = (ctx: AuthContext, scope: string) => ctx.scopes.includes('*') || ctx.scopes.includes(scope);

/** Issues a key for `userId`. A key can grant only scopes it holds itself. */
export async function issueKey(ctx: AuthContext, userId: string, input: z.output<typeof ApiKeyCreate>) {
  if (input.expiresAt && Date.parse(input.expiresAt) <= Date.now())
    throw validationError('Request validation failed.', {
      issues: [{ path: 'body.expiresAt', message: 'expiresAt must be in the future', code: 'custom' }],
    });
  const scopes = [...new Set(input.scopes)];
  const missing = scopes.filter((s) => !holds(ctx, s));
  if (missing.length) throw forbidden(`A key cannot grant scopes it does not hold: ${missing.join(', ')}.`);
  const { record, key } = await authStore.createKey(ctx.orgId, userId, {
    name: input.name,
    scopes: scopes.includes('*') ? ['*'] : scopes,
    expiresAt: input.expiresAt ?? null,
  });
  return { ...keyView(record), key };
}

const isLiveAdminKey = (k: KeyRecord, admins: Set<string>) =>
  admins.has(k.userId) &&
  (k.scopes.includes('*') || k.scopes.includes('admin')) &&
  (!k.expiresAt || Date.parse(k.expiresAt) > Date.now());

export async function revokeKey(ctx: AuthContext, keyId: string) {
  const record = await authStore.getKey(ctx.orgId, keyId);
  if (!record) throw notFound('API key');
  if (record.id === ctx.keyId) {
    const admins = new Set(
      (await authStore.listUsers(ctx.orgId)).filter((u) => u.role === 'admin').map((u) => u.id),
    );
    const liveAdminKeys = (await authStore.listKeys(ctx.orgId)).filter((k) => isLiveAdminKey(k, admins));
    if (liveAdminKeys.length <= 1)
      throw badRequest(
        'This is the organization’s last admin key; create another admin key before revoking it.',
      );
  }
  await authStore.revokeKey(record);
  return { deleted: true as const, revoked: true as const };
}

/**
 * Every connection id must name a live connection of the caller's organization (one Query of the
 * organization's connections); otherwise 400 naming the first bad entries.
 */
async function assertOwnConnections(ctx: AuthContext, ids: string[]): Promise<string[]> {
  const unique = [...new Set(ids)];
  if (unique.length === 0) return unique;
  const own = new Set((await connectionStore.list(ctx.orgId)).map((c) => c.id));
  const issues = ids
    .map((id, i) => ({ id, i }))
    .filter(({ id }) => !own.has(id))
    .slice(0, 20)
    .map(({ i }) => ({
      path: `body.connectionIds.${i}`,
      message: 'No connection with this id in the organization.',
      code: 'custom',
    }));
  if (issues.length) throw validationError('Request validation failed.', { issues });
  return unique;
}

export async function addMember(ctx: AuthContext, input: z.output<typeof MemberCreate>) {
  const connectionIds = await assertOwnConnections(ctx, input.connectionIds);
  const user = await authStore.createUser(
    ctx.orgId,
    { ...input, connectionIds },
    config().LOUPE_DEFAULT_BALANCE_CENTS,
  );
  if (!user) throw new AppError(409, 'ALREADY_EXISTS', 'A member with that email already exists.');
  return memberView(user);
}

export async function getMember(ctx: AuthContext, id: string) {
  const user = await authStore.getUser(ctx.orgId, id);
  if (!user) throw notFound('Member');
  return user;
}

async function assertNotLastAdmin(ctx: AuthContext, user: User) {
  if (user.role !== 'admin') return;
  const admins = (await authStore.listUsers(ctx.orgId)).filter((u) => u.role === 'admin');
  if (admins.length <= 1) throw badRequest('The organization must keep at least one admin.');
}

export async function changeMember(ctx: AuthContext, id: string, input: z.output<typeof MemberUpdate>) {
  const user = await getMember(ctx, id);
  const connectionIds =
    input.connectionIds !== undefined ? await assertOwnConnections(ctx, input.connectionIds) : undefined;
  if (input.role === 'member') await assertNotLastAdmin(ctx, user);
  const updated = await authStore.updateUser(ctx.orgId, id, {
    ...(input.name !== undefined ? { name: input.name } : {}),
    ...(input.role !== undefined ? { role: input.role } : {}),
    ...(connectionIds !== undefined ? { connectionIds } : {}),
  });
  if (!updated) throw notFound('Member');
  return memberView(updated);
}

/** Removes a member and revokes every key it holds (idempotent: safe to repeat). */
export async function removeMember(ctx: AuthContext, id: string) {
  const user = await getMember(ctx, id);
  await assertNotLastAdmin(ctx, user);
  for (const k of await authStore.listKeys(ctx.orgId, id)) await authStore.revokeKey(k);
  await authStore.deleteUser(ctx.orgId, user);
  return { deleted: true as const };
}
