import { AnnotateJob, runAutoAnnotation } from '../../shared/connections/auto-annotate';
import { runEmbeddingRefresh } from '../../shared/connections/embedding-refresh';
import { queueWorker } from '../../shared/platform/queue/worker';

/**
 * Queue worker: automatic annotation of a connection's tables (POST /connections/{id}/annotations/auto),
 * and the embedding index refresh after a user's annotation edit (`embedOnly`).
 */
export const handler = queueWorker<AnnotateJob>(
  async (job) => {
    if (job.embedOnly) await runEmbeddingRefresh(job);
    else await runAutoAnnotation(job);
  },
  { schema: AnnotateJob, processInParallel: false },
);
