import { checkHealth, HealthCheckMessage } from '../../shared/connections/health';
import { queueWorker } from '../../shared/platform/queue/worker';

/** Queue worker: pings one connection for one health-check slot (queued by health-fanout). */
export const handler = queueWorker<HealthCheckMessage>(
  async (msg) => {
    await checkHealth(msg);
  },
  { schema: HealthCheckMessage },
);
