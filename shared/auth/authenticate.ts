import { AppError } from '../platform/errors';
import { logger } from '../platform/logger';
import type { AuthContext } from './context';
import { hashKey, looksLikeKey } from './key-material';
import { authStore } from './store';

/**
 * Resolves `Authorization: Bearer lp_…` to the caller. Every failure is the same 401 (with the
 * RFC 9728 challenge) so that the answer tells nothing about which keys exist.
 */
export async function authenticate(
  authorization: string | undefined,
  resourceMetadataUrl: string,
  now = new Date(),
): Promise<AuthContext> {
  const fail = (message: string) =>
    new AppError(401, 'UNAUTHORIZED', message, undefined, {
      'WWW-Authenticate': `Bearer resource_metadata="${resourceMetadataUrl}"`,
    });
  if (!authorization) throw fail('Missing Authorization header: send "Authorization: Bearer <API key>".');
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
  if (!match) throw fail('Malformed Authorization header: expected "Bearer <API key>".');
  const key = match[1];
  if (!looksLikeKey(key)) throw fail('Invalid API key.');
  const record = await authStore.findKeyByHash(hashKey(key));
  if (!record || record.revokedAt) throw fail('Invalid API key.');
  if (record.expiresAt && Date.parse(record.expiresAt) <= now.getTime()) throw fail('API key has expired.');
  const user = await authStore.getUser(record.orgId, record.userId);
  if (!user) throw fail('Invalid API key.');
  if (!record.lastUsedAt || Date.parse(record.lastUsedAt) < now.getTime() - 60_000) {
    await authStore
      .touchKey(record, now)
      .catch((e) => logger().warn('lastUsedAt update failed', { error: String(e) }));
  }
  return {
    orgId: record.orgId,
    userId: record.userId,
    keyId: record.id,
    role: user.role,
    scopes: record.scopes,
    connectionIds: user.connectionIds ?? [],
  };
}

export const hasScope = (ctx: AuthContext, scope: string) =>
  ctx.scopes.includes('*') || ctx.scopes.includes(scope);
