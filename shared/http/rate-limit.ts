import { db } from '../platform/db/store';
import { rateLimited } from '../platform/errors';

export interface RateState {
  limit: number;
  remaining: number;
  resetSeconds: number;
}

export function rateHeaders(s: RateState): Record<string, string> {
  return {
    'RateLimit-Limit': String(s.limit),
    'RateLimit-Remaining': String(s.remaining),
    'RateLimit-Reset': String(s.resetSeconds),
    'X-RateLimit-Limit': String(s.limit),
    'X-RateLimit-Remaining': String(s.remaining),
    'X-RateLimit-Reset': String(s.resetSeconds),
  };
}

const WINDOW_MS = 60_000;

function windowOf(now: number) {
  const start = Math.floor(now / WINDOW_MS) * WINDOW_MS;
  return { start, resetSeconds: Math.max(1, Math.ceil((start + WINDOW_MS - now) / 1000)) };
}

/** Throws 429 with Retry-After when over the limit; otherwise returns the headers to send. */
function decide(count: number, limit: number, resetSeconds: number): Record<string, string> {
  const state = { limit, remaining: Math.max(0, limit - count), resetSeconds };
  if (count > limit) throw rateLimited(resetSeconds, rateHeaders(state));
  return rateHeaders(state);
}

/** Fixed one-minute windows held in this instance's memory (the discovery endpoint, per IP). */
export class InstanceRateLimiter {
  private windows = new Map<string, { start: number; count: number }>();
  constructor(private readonly limit: number) {}

  hit(key: string, now = Date.now()): Record<string, string> {
    const { start, resetSeconds } = windowOf(now);
    let w = this.windows.get(key);
    if (!w || w.start !== start) {
      if (this.windows.size > 10_000) this.windows.clear();
      w = { start, count: 0 };
      this.windows.set(key, w);
    }
    w.count += 1;
    return decide(w.count, this.limit, resetSeconds);
  }
}

/**
 * Fixed one-minute windows counted in the shared table, so the limit holds across instances: one
 * atomic ADD per request on `ORG#o / RATE#bucket#window`, expired by TTL.
 */
export async function hitSharedLimit(
  orgId: string,
  bucket: string,
  limit: number,
  now = Date.now(),
): Promise<Record<string, string>> {
  const { start, resetSeconds } = windowOf(now);
  const count = await db.increment(`ORG#${orgId}`, `RATE#${bucket}#${start}`, 'count', 1, {
    ttl: Math.floor((start + 2 * WINDOW_MS) / 1000),
  });
  return decide(count, limit, resetSeconds);
}
