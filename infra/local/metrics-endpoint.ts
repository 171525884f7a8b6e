import type { IncomingMessage, ServerResponse } from 'node:http';
import { authenticate } from '../../shared/auth/authenticate';
import { envelope } from '../../shared/http/envelope';
import { resourceMetadataUrl } from '../../shared/http/middleware/auth';
import { validHost } from '../../shared/http/middleware/request-context';
import { config } from '../../shared/platform/config';
import { AppError, forbidden, isAppError } from '../../shared/platform/errors';
import { newId } from '../../shared/platform/ids';
import { localRegistry } from '../../shared/platform/measures';
import { mergeSnapshots, renderPrometheus, type Snapshot } from '../../shared/platform/measures/registry';

/** Where the registries are read from: this thread's, or every instance thread's and the main thread's. */
export type SnapshotSource = () => Promise<Snapshot[]>;
export const thisThread: SnapshotSource = async () => [localRegistry().snapshot()];

export const METRICS_PATH = '/metrics';
const PROMETHEUS_TEXT = 'text/plain; version=0.0.4; charset=utf-8';

/** Figures of the whole process (every thread), Prometheus' standard names. */
function processLines(): string[] {
  const cpu = process.cpuUsage();
  const started = Date.now() / 1000 - process.uptime();
  return [
    '# HELP process_cpu_seconds_total User and system CPU time of the local runtime process, all threads.',
    '# TYPE process_cpu_seconds_total counter',
    `process_cpu_seconds_total ${(cpu.user + cpu.system) / 1e6}`,
    '# HELP process_resident_memory_bytes Resident memory of the local runtime process.',
    '# TYPE process_resident_memory_bytes gauge',
    `process_resident_memory_bytes ${process.memoryUsage.rss()}`,
    '# HELP process_start_time_seconds When the local runtime process started, Unix time.',
    '# TYPE process_start_time_seconds gauge',
    `process_start_time_seconds ${Math.round(started)}`,
  ];
}

function answerError(res: ServerResponse, e: AppError) {
  const body = envelope(newId(), null, {
    code: e.code,
    message: e.message,
    ...(e.details !== undefined ? { details: e.details } : {}),
  });
  res
    .writeHead(e.status, { 'Content-Type': 'application/json', ...(e.headers ?? {}) })
    .end(JSON.stringify(body));
  return e.status;
}

/**
 * `GET /metrics` of the local runtime (outside `/v1`, where `/metrics` is the saved-metrics API): Loupe's
 * measures in the Prometheus text format, for an admin key of any organization on this runtime (the
 * figures name no organization). Without a valid key 401 (with the same challenge as the API), with a
 * member's key 403. Returns the status answered.
 */
export async function serveMetrics(
  req: IncomingMessage,
  res: ServerResponse,
  collect: SnapshotSource,
): Promise<number> {
  if (req.method !== 'GET' && req.method !== 'HEAD')
    return answerError(
      res,
      new AppError(
        405,
        'METHOD_NOT_ALLOWED',
        `${req.method} is not supported on ${METRICS_PATH}.`,
        { allowed: ['GET'] },
        { Allow: 'GET' },
      ),
    );
  const host = validHost(req.headers.host) ?? 'localhost';
  const base = (config().LOUPE_PUBLIC_URL ?? `http://${host}/v1`).replace(/\/$/, '');
  try {
    const ctx = await authenticate(req.headers.authorization, resourceMetadataUrl(base));
    if (ctx.role !== 'admin') throw forbidden('Reading /metrics requires an admin API key.');
  } catch (e) {
    if (isAppError(e)) return answerError(res, e);
    throw e;
  }
  const text = renderPrometheus(mergeSnapshots(await collect()), processLines());
  res.writeHead(200, { 'Content-Type': PROMETHEUS_TEXT, 'Cache-Control': 'no-store' });
  res.end(req.method === 'HEAD' ? undefined : text);
  return 200;
}
