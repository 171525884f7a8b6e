import { db } from '../platform/db/store';
import { QUEUED_SK } from './annotation-embeddings';
import { listAnnotationsOf } from './annotations';
import type { AnnotateJob } from './auto-annotate';
import { refreshEmbeddingIndex } from './embedding-index';
import { loadSchema } from './schema-store';
import { connectionStore, connPk } from './store';

/*
 * The worker side of annotation-embeddings.ts (which annotations.ts loads lazily to queue a refresh):
 * apart from it, so that the queueing side does not import annotations.ts back.
 */

/** The `annotate` worker's refresh job (`embedOnly`): the index brought up to date with the annotations. */
export async function runEmbeddingRefresh(job: AnnotateJob): Promise<void> {
  await db.delete(connPk(job.orgId, job.connectionId), QUEUED_SK);
  const rec = await connectionStore.get(job.orgId, job.connectionId);
  const cached = rec ? await loadSchema(job.orgId, job.connectionId) : null;
  if (!rec || !cached) return; // deleted meanwhile, or never introspected: nothing to embed
  await refreshEmbeddingIndex(
    { orgId: job.orgId, userId: job.requestedBy },
    job.connectionId,
    cached.schema.tables,
    () => listAnnotationsOf(job.orgId, job.connectionId),
  );
}
