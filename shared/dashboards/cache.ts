import { createHash } from 'node:crypto';
import type { QueryResult } from '../databases/drivers/types';
import { db } from '../platform/db/store';
import { DEFAULT_CACHE_SECONDS } from './api';
import type { WidgetRecord } from './store';

/**
 * Widget result cache, shared by every Lambda instance: one DynamoDB item per widget,
 * `ORG#o / WCACHE#w`. Expiry is decided here from `cachedAtMs` and the widget's current
 * `cacheSeconds`; the item's `ttl` only lets DynamoDB clean up. The item records a fingerprint of the
 * widget's connection and query: a result computed for an older query is never served, even if a
 * slow run writes it after the widget changed.
 *
 * Results are stored as their JSON text and only when that text is at most 350 KB, so the item
 * stays under DynamoDB's 400 KB item limit; larger results are answered fresh every time.
 */
export const MAX_CACHED_BYTES = 350_000;

interface CacheItem {
  fingerprint: string;
  cachedAtMs: number;
  cachedAt: string;
  result: string;
}

const pk = (orgId: string) => `ORG#${orgId}`;
const sk = (widgetId: string) => `WCACHE#${widgetId}`;

export const fingerprint = (w: Pick<WidgetRecord, 'connectionId' | 'query'>) =>
  createHash('sha256')
    .update(JSON.stringify([w.connectionId, w.query]))
    .digest('hex');

/** Seconds a widget's results stay fresh: `config.cacheSeconds` (0 disables), else 60. */
export function cacheSecondsOf(w: Pick<WidgetRecord, 'config'>): number {
  try {
    const v = (JSON.parse(w.config) as { cacheSeconds?: unknown }).cacheSeconds;
    if (Number.isInteger(v) && (v as number) >= 0) return v as number;
  } catch {
    // config is validated on write; an unreadable one falls back to the default
  }
  return DEFAULT_CACHE_SECONDS;
}

export const widgetCache = {
  /** The cached result if present, computed for the widget's current query and still fresh. */
  async read(
    w: WidgetRecord,
    seconds: number,
    now = Date.now(),
  ): Promise<{ result: QueryResult; cachedAt: string } | undefined> {
    if (seconds <= 0) return undefined;
    const item = await db.get<CacheItem>(pk(w.orgId), sk(w.id));
    if (!item || item.fingerprint !== fingerprint(w)) return undefined;
    if (now - item.cachedAtMs >= seconds * 1000 || item.cachedAtMs > now + 5_000) return undefined;
    try {
      return { result: JSON.parse(item.result) as QueryResult, cachedAt: item.cachedAt };
    } catch {
      return undefined;
    }
  },

  /** Stores a fresh result; false (and nothing stored) when its JSON exceeds MAX_CACHED_BYTES. */
  async write(w: WidgetRecord, result: QueryResult, seconds: number, now = Date.now()): Promise<boolean> {
    const json = JSON.stringify(result);
    if (Buffer.byteLength(json, 'utf8') > MAX_CACHED_BYTES) {
      await this.drop(w.orgId, w.id);
      return false;
    }
    await db.put({
      pk: pk(w.orgId),
      sk: sk(w.id),
      type: 'widget-cache',
      widgetId: w.id,
      fingerprint: fingerprint(w),
      cachedAtMs: now,
      cachedAt: new Date(now).toISOString(),
      result: json,
      ttl: Math.ceil(now / 1000) + seconds + 3600,
    });
    return true;
  },

  async drop(orgId: string, widgetId: string): Promise<void> {
    await db.delete(pk(orgId), sk(widgetId));
  },
};
