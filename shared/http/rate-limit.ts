import { db } from '../platform/db/store';
import { rateLimited } from '../platform/errors';
import { count } from '../platform/measures';

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
function decide(n: number, limit: number, resetSeconds: number, name: string): Record<string, string> {
  const state = { limit, remaining: Math.max(0, limit - n), resetSeconds };
  if (n > limit) throw limited(name, resetSeconds, rateHeaders(state));
  return rateHeaders(state);
}

/** The 429, counted in the RateLimited measure by the limit's name (org, ai, discovery). */
function limited(name: string, resetSeconds: number, headers: Record<string, string>) {
  count('rateLimited', { limit: name });
  return rateLimited(resetSeconds, headers);
}

/** Fixed one-minute windows held in this instance's memory (the discovery endpoint, per IP). */
export class InstanceRateLimiter {
  private windows = new Map<string, { start: number; count: number }>();
  constructor(
    private readonly limit: number,
    /** The limit's name in the RateLimited measure. */
    private readonly name = 'discovery',
  ) {}

  hit(key: string, now = Date.now()): Record<string, string> {
    const { start, resetSeconds } = windowOf(now);
    let w = this.windows.get(key);
    if (!w || w.start !== start) {
      if (this.windows.size > 10_000) this.windows.clear();
      w = { start, count: 0 };
      this.windows.set(key, w);
    }
    w.count += 1;
    return decide(w.count, this.limit, resetSeconds, this.name);
  }
}

/** What this instance holds of one organization bucket's window. */
interface Lease {
  /** The window (its start, ms). */
  start: number;
  /** Admissions leased from the shared count and not spent yet. */
  left: number;
  /** The window's shared count as of this instance's last lease call (its own leases included). */
  known: number;
  /** Size of the next lease. */
  slice: number;
  /** Lease calls made in this window. */
  calls: number;
  /** The shared count reached the limit: nothing more can be leased in this window (leases are never returned). */
  exhausted: boolean;
  pending?: Promise<void>;
}

/** The largest lease: a tenth of the limit (at least 1), which bounds what idle instances can hold back. */
export const maxSliceOf = (limit: number) => Math.max(1, Math.floor(limit / 10));

/**
 * Fixed one-minute windows counted in the shared table, so the limit holds across instances. An instance
 * does not write per request: it leases a slice of the window's budget with ONE conditional write on
 * `ORG#o / RATE#bucket#window` (`ADD count :n` if `count <= limit - n`, expired by TTL) and spends it in
 * memory. On a failed condition it asks for the remainder (read from the failure, or with a GetItem where
 * the store does not return it); when nothing is left it answers 429 until the window ends.
 *
 * The slice starts at 1 and doubles with each further lease in the same window (the instance used up
 * most of the previous one within the minute), up to maxSliceOf(limit); a window that ends with leased
 * admissions unspent halves it for the next one, and an instance idle for a whole window starts again
 * at 1. The next lease starts when a quarter of the slice is left, alongside the request that spent it,
 * so that steady traffic never waits for one (a request waits only when nothing is left). The shared
 * count never exceeds the limit, so neither do admissions across instances; unspent leases expire with
 * the window (a lease started early asks only for what keeps the unspent part within maxSlice), so a
 * window that refuses requests has admitted at least limit - instances x maxSlice.
 *
 * Headers: `remaining` is limit - (the shared count at this instance's last lease) + (its unspent
 * lease), i.e. what this instance could still admit if no other instance leases more; with one
 * instance it is exactly limit - admitted.
 */
export class SharedRateLimiter {
  private leases = new Map<string, Lease>();

  async hit(orgId: string, bucket: string, limit: number, now = Date.now()): Promise<Record<string, string>> {
    const { start, resetSeconds } = windowOf(now);
    const key = `${orgId}#${bucket}`;
    for (;;) {
      let l = this.leases.get(key);
      if (!l || l.start !== start) l = this.openWindow(key, l, start, limit);
      if (l.left > 0) {
        l.left -= 1;
        // Running low: lease the next slice now, alongside this request, so that a steady stream of
        // requests never waits for a lease call.
        if (l.left * 4 <= l.slice && !l.exhausted && !l.pending) this.startLease(orgId, bucket, limit, l);
        return rateHeaders({ limit, remaining: Math.max(0, limit - l.known + l.left), resetSeconds });
      }
      if (l.exhausted)
        throw limited(
          bucket === 'all' ? 'org' : bucket,
          resetSeconds,
          rateHeaders({ limit, remaining: 0, resetSeconds }),
        );
      await (l.pending ?? this.startLease(orgId, bucket, limit, l));
    }
  }

  /** Resolves once the lease calls under way have finished (tests). */
  async idle(): Promise<void> {
    await Promise.allSettled([...this.leases.values()].map((l) => l.pending));
  }

  private startLease(orgId: string, bucket: string, limit: number, l: Lease): Promise<void> {
    const pending = this.lease(orgId, bucket, limit, l).finally(() => {
      if (l.pending === pending) l.pending = undefined;
    });
    pending.catch(() => {}); // a request that needs it awaits it (and sees the failure); a head start may fail alone
    l.pending = pending;
    return pending;
  }

  private openWindow(key: string, prev: Lease | undefined, start: number, limit: number): Lease {
    let slice = 1;
    if (prev && prev.start === start - WINDOW_MS)
      slice = prev.left > 0 ? Math.max(1, Math.floor(prev.slice / 2)) : prev.slice;
    if (!prev && this.leases.size > 10_000) this.leases.clear();
    const l: Lease = {
      start,
      left: 0,
      known: 0,
      slice: Math.min(slice, maxSliceOf(limit)),
      calls: 0,
      exhausted: false,
    };
    this.leases.set(key, l);
    return l;
  }

  /** One conditional write per attempt; a failed attempt means another instance leased meanwhile. */
  private async lease(orgId: string, bucket: string, limit: number, l: Lease): Promise<void> {
    if (l.calls > 0) l.slice = Math.min(l.slice * 2, maxSliceOf(limit));
    const pk = `ORG#${orgId}`;
    const sk = `RATE#${bucket}#${l.start}`;
    // What is still unspent counts against the slice: an instance never holds back more than maxSlice.
    let n = Math.max(1, Math.min(l.slice, limit, maxSliceOf(limit) - l.left));
    for (;;) {
      l.calls += 1;
      const r = await db.tryUpdate<{ count: number }>({
        pk,
        sk,
        update: 'ADD #c :n SET #t = if_not_exists(#t, :ttl)',
        condition: 'attribute_not_exists(#c) OR #c <= :most',
        names: { '#c': 'count', '#t': 'ttl' },
        values: { ':n': n, ':most': limit - n, ':ttl': Math.floor((l.start + 2 * WINDOW_MS) / 1000) },
        returnValues: 'UPDATED_NEW',
      });
      if (r.ok) {
        l.left += n;
        l.known = Number(r.item.count);
        return;
      }
      const count = Number(r.old?.count ?? (await db.get<{ count?: number }>(pk, sk))?.count ?? 0);
      l.known = Math.max(l.known, count);
      if (count >= limit) {
        l.exhausted = true;
        return;
      }
      n = Math.min(n, limit - count);
    }
  }
}

const shared = new SharedRateLimiter();

/** Admits one request of the organization's bucket in this instance's lease (see SharedRateLimiter). */
export function hitSharedLimit(
  orgId: string,
  bucket: string,
  limit: number,
  now = Date.now(),
): Promise<Record<string, string>> {
  return shared.hit(orgId, bucket, limit, now);
}
