import type { MiddlewareObj } from '@middy/core';
import { config } from '../../platform/config';
import { hitSharedLimit, InstanceRateLimiter } from '../rate-limit';
import type { HttpRequest } from './state';

let discovery: InstanceRateLimiter | undefined;

/** GET / is limited per client IP in this instance's memory, before authentication (failures count too). */
export function discoveryRateLimit(): MiddlewareObj {
  return {
    before: async (request) => {
      const req = request as unknown as HttpRequest;
      const spec = req.state.route!.spec;
      if (spec.path !== '/' || spec.method !== 'GET') return;
      discovery ??= new InstanceRateLimiter(config().LOUPE_DISCOVERY_RATE_LIMIT);
      Object.assign(req.state.headers, discovery.hit(req.state.sourceIp));
    },
  };
}

/**
 * Every other authenticated route is limited per organization in the shared store (so the limit holds
 * across instances), and AI routes against a second, smaller bucket as well.
 */
export function orgRateLimit(): MiddlewareObj {
  return {
    before: async (request) => {
      const req = request as unknown as HttpRequest;
      const spec = req.state.route!.spec;
      const ctx = req.state.ctx;
      if (!ctx || (spec.path === '/' && spec.method === 'GET')) return;
      const cfg = config();
      Object.assign(req.state.headers, await hitSharedLimit(ctx.orgId, 'all', cfg.LOUPE_ORG_RATE_LIMIT));
      if (spec.ai)
        Object.assign(req.state.headers, await hitSharedLimit(ctx.orgId, 'ai', cfg.LOUPE_AI_RATE_LIMIT));
    },
  };
}

/** Tests start from a fresh instance. */
export function resetInstanceLimits(): void {
  discovery = undefined;
}
