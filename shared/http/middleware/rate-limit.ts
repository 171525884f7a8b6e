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

const isDiscovery = (spec: { path: string; method: string }) => spec.path === '/' && spec.method === 'GET';

/**
 * Admits this request in the organization's shared window: usually from this instance's lease, without a
 * store call; when the lease is spent, with one conditional write that leases more (shared/http/rate-limit.ts).
 * auth calls it as soon as the key is known, so that a lease call runs alongside the user lookup;
 * orgRateLimit awaits it. A request that then
 * fails authentication (its user is gone) or lacks admin rights ignores the count (it still counted).
 */
export function beginOrgRateLimit(req: HttpRequest, orgId: string): void {
  if (isDiscovery(req.state.route!.spec)) return;
  const count = hitSharedLimit(orgId, 'all', config().LOUPE_ORG_RATE_LIMIT);
  count.catch(() => {}); // awaited by orgRateLimit; ignored when the request ends before it
  req.state.orgLimit = { orgId, count };
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
      if (!ctx || isDiscovery(spec)) return;
      const cfg = config();
      const started = req.state.orgLimit?.orgId === ctx.orgId ? req.state.orgLimit.count : undefined;
      Object.assign(
        req.state.headers,
        await (started ?? hitSharedLimit(ctx.orgId, 'all', cfg.LOUPE_ORG_RATE_LIMIT)),
      );
      if (spec.ai)
        Object.assign(req.state.headers, await hitSharedLimit(ctx.orgId, 'ai', cfg.LOUPE_AI_RATE_LIMIT));
    },
  };
}
