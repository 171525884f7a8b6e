import { AnnotateJob, runAutoAnnotation } from '../../shared/connections/auto-annotate';
import { queueWorker } from '../../shared/platform/queue/worker';

/** Queue worker: automatic annotation of a connection's tables (POST /connections/{id}/annotations/auto). */
export const handler = queueWorker<AnnotateJob>(
  async (job) => {
    await runAutoAnnotation(job);
  },
  { schema: AnnotateJob, processInParallel: false },
);
