import type { MiddlewareObj } from '@middy/core';
import { callerOf, hasScope, liveKey, scopesAllow } from '../../auth/authenticate';
import { forbidden } from '../../platform/errors';
import { beginOrgRateLimit } from './rate-limit';
import { type HttpRequest, headerOf } from './state';

export const resourceMetadataUrl = (baseUrl: string) => `${baseUrl}/.well-known/oauth-protected-resource`;

/**
 * Authenticates the key, then checks the route's scope and admin requirement (403 otherwise). Once the
 * key is known (and grants the route's scope), the organization's rate-limit check starts; the user's
 * role and connections usually come with the key (see store.ts), otherwise the user lookup runs alongside
 * it. orgRateLimit awaits the check.
 */
export function auth(): MiddlewareObj {
  return {
    before: async (request) => {
      const req = request as unknown as HttpRequest;
      const spec = req.state.route!.spec;
      if (spec.auth === 'none') return;
      const metadataUrl = resourceMetadataUrl(req.state.baseUrl);
      const key = await liveKey(headerOf(req.event, 'authorization'), metadataUrl);
      if (!spec.scope || scopesAllow(key.scopes, spec.scope)) beginOrgRateLimit(req, key.orgId);
      const ctx = await callerOf(key, metadataUrl);
      if (spec.scope && !hasScope(ctx, spec.scope))
        throw forbidden(`This API key lacks the "${spec.scope}" scope required for this operation.`);
      if (spec.admin && ctx.role !== 'admin') throw forbidden('This operation requires an admin.');
      req.state.ctx = ctx;
    },
  };
}
