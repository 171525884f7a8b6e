import type { MiddlewareObj } from '@middy/core';
import { authenticate, hasScope } from '../../auth/authenticate';
import { forbidden } from '../../platform/errors';
import { type HttpRequest, headerOf } from './state';

export const resourceMetadataUrl = (baseUrl: string) => `${baseUrl}/.well-known/oauth-protected-resource`;

/** Authenticates the key, then checks the route's scope and admin requirement (403 otherwise). */
export function auth(): MiddlewareObj {
  return {
    before: async (request) => {
      const req = request as unknown as HttpRequest;
      const spec = req.state.route!.spec;
      if (spec.auth === 'none') return;
      const ctx = await authenticate(
        headerOf(req.event, 'authorization'),
        resourceMetadataUrl(req.state.baseUrl),
      );
      if (spec.scope && !hasScope(ctx, spec.scope))
        throw forbidden(`This API key lacks the "${spec.scope}" scope required for this operation.`);
      if (spec.admin && ctx.role !== 'admin') throw forbidden('This operation requires an admin.');
      req.state.ctx = ctx;
    },
  };
}
