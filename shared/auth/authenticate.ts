import { afterAnswer } from '../platform/after-answer';
import { AppError } from '../platform/errors';
import type { AuthContext } from './context';
import { hashKey, looksLikeKey } from './key-material';
import { authStore, type KeyLookup, type UserAuth } from './store';

const unauthorized = (resourceMetadataUrl: string, message: string) =>
  new AppError(401, 'UNAUTHORIZED', message, undefined, {
    'WWW-Authenticate': `Bearer resource_metadata="${resourceMetadataUrl.replace(/[\\"\u0000-\u001f\u007f]/g, (c) => encodeURIComponent(c))}"`,
  });

/**
 * Resolves `Authorization: Bearer lp_…` to the caller. Every failure is the same 401 (with the
 * RFC 9728 challenge) so that the answer tells nothing about which keys exist.
 */
export async function authenticate(
  authorization: string | undefined,
  resourceMetadataUrl: string,
  now = new Date(),
): Promise<AuthContext> {
  return callerOf(await liveKey(authorization, resourceMetadataUrl, now), resourceMetadataUrl, now);
}

/**
 * The first half of authenticate: the live key record (revoked and expired keys fail, checked on every
 * request against the record and the clock). The record comes from this instance's key cache when it was
 * read less than LOUPE_KEY_CACHE_MS (≤ 10 s) ago, else from the store (store.ts, keyForAuthentication).
 * Callers may start work that needs only the organization before calling callerOf.
 */
export async function liveKey(
  authorization: string | undefined,
  resourceMetadataUrl: string,
  now = new Date(),
): Promise<KeyLookup> {
  const fail = (message: string) => unauthorized(resourceMetadataUrl, message);
  if (!authorization) throw fail('Missing Authorization header: send "Authorization: Bearer <API key>".');
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
  if (!match) throw fail('Malformed Authorization header: expected "Bearer <API key>".');
  const key = match[1];
  if (!looksLikeKey(key)) throw fail('Invalid API key.');
  const record = await authStore.keyForAuthentication(hashKey(key), now.getTime());
  if (!record || record.revokedAt) throw fail('Invalid API key.');
  if (record.expiresAt && Date.parse(record.expiresAt) <= now.getTime()) throw fail('API key has expired.');
  return record;
}

/** The topic of lastUsedAt writes (after-answer.ts): the key listing waits for this instance's. */
export const KEY_USE_TOPIC = 'key-use';

/**
 * The second half of authenticate: the key's user and, once a minute, lastUsedAt. The user's role,
 * assigned connections and deletion come from the copy on the key lookup item just read (kept current by
 * every member change before it answers, see store.ts); a lookup item without one reads the user item.
 * lastUsedAt is written alongside the request, not waited for (after-answer.ts): this instance's copy of
 * the record takes the new time at once, so the next minute's requests do not write it again.
 */
export async function callerOf(
  record: KeyLookup,
  resourceMetadataUrl: string,
  now = new Date(),
): Promise<AuthContext> {
  // A lookup item without the copy (older data): the user item's facts, kept on this instance's copy.
  record.userAuth ??= await currentAuth(record.orgId, record.userId);
  const user = record.userAuth;
  if (!user || user.deleted) throw unauthorized(resourceMetadataUrl, 'Invalid API key.');
  if (!record.lastUsedAt || Date.parse(record.lastUsedAt) < now.getTime() - 60_000) {
    afterAnswer(KEY_USE_TOPIC, 'lastUsedAt update', authStore.touchKey(record, now));
    record.lastUsedAt = now.toISOString();
  }
  return contextOf(record.orgId, record.userId, record.id, record.scopes, user);
}

/** The user's role and assigned connections as the user item has them now; undefined for a removed user. */
async function currentAuth(orgId: string, userId: string): Promise<UserAuth | undefined> {
  const item = await authStore.getUser(orgId, userId);
  return item && { role: item.role, connectionIds: item.connectionIds ?? [], deleted: false };
}

const contextOf = (
  orgId: string,
  userId: string,
  keyId: string,
  scopes: string[],
  user: UserAuth,
): AuthContext => ({
  orgId,
  userId,
  keyId,
  role: user.role,
  scopes,
  connectionIds: user.connectionIds ?? [],
});

/**
 * The context of a user acting without a request (a scheduled workflow run acts as its publisher): the
 * role and assigned connections the organization has for the user now, and only the given scopes;
 * undefined once the user was removed from the organization. `keyId` names what acts (no API key does).
 */
export async function actingAs(
  orgId: string,
  userId: string,
  keyId: string,
  scopes: string[],
): Promise<AuthContext | undefined> {
  const user = await currentAuth(orgId, userId);
  return user && contextOf(orgId, userId, keyId, scopes, user);
}

/** Whether a list of key scopes grants `scope` (`*` grants every scope). */
export const scopesAllow = (scopes: string[], scope: string) =>
  scopes.includes('*') || scopes.includes(scope);

export const hasScope = (ctx: AuthContext, scope: string) => scopesAllow(ctx.scopes, scope);
