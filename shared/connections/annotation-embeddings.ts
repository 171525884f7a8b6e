import { embeddingSettings } from '../ai/embeddings';
import type { AuthContext } from '../auth/context';
import { db } from '../platform/db/store';
import { nowIso } from '../platform/ids';
import { logger } from '../platform/logger';
import { queue } from '../platform/queue';
import type { AnnotateJob } from './auto-annotate';
import { connPk } from './store';

/**
 * A user's annotation edit (create, update, delete) changes what the optional embedding index embeds
 * for that table (chat/embedding-index.ts, `embeddingText`). The edit queues one refresh on the
 * `annotate` worker, which embeds again only the tables whose text changed (usually the edited one),
 * paid by the user who edited.
 *
 * Edits are coalesced per connection by one marker item, taken with one conditional write:
 *  ORG#o#CONN#c / EMBQUEUED   queuedAt (epoch ms): a refresh is queued and has not started yet
 * (outside the `EMBIDX#` prefix, which index rebuilds clean up; removed with the connection). An edit
 * that finds the marker queues nothing: the queued refresh starts later and reads every annotation
 * then. The refresh removes the marker before it reads, so an edit made while it runs queues the next
 * one. A marker older than QUEUED_STALE_MS is taken as lost (its message dead-lettered) and replaced.
 */
export const QUEUED_SK = 'EMBQUEUED';
/** Edits within this window after the first are embedded by the same refresh. */
export const EDIT_REFRESH_DELAY_SECONDS = 5;
const QUEUED_STALE_MS = 15 * 60_000;

/**
 * Queues the refresh after a user's edit when the embedding index is on. Never fails the edit: on any
 * failure the index catches up at the next introspection or automatic annotation (logged).
 */
export async function queueEmbeddingRefresh(ctx: AuthContext, connectionId: string): Promise<void> {
  if (!embeddingSettings()) return;
  const pk = connPk(ctx.orgId, connectionId);
  const now = Date.now();
  try {
    const taken = await db.put(
      { pk, sk: QUEUED_SK, queuedAt: now },
      {
        condition: 'attribute_not_exists(pk) OR queuedAt < :stale',
        values: { ':stale': now - QUEUED_STALE_MS },
      },
    );
    if (!taken) return;
    const job: AnnotateJob = {
      orgId: ctx.orgId,
      connectionId,
      tables: null,
      requestedBy: ctx.userId,
      requestedAt: nowIso(),
      embedOnly: true,
    };
    try {
      await queue().send('annotate', job, { delaySeconds: EDIT_REFRESH_DELAY_SECONDS });
    } catch (e) {
      await db.delete(pk, QUEUED_SK).catch(() => undefined);
      throw e;
    }
  } catch (e) {
    logger().warn('Queueing the embedding refresh after an annotation edit failed', {
      connectionId,
      error: (e as Error).message,
    });
  }
}
