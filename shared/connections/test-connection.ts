import type { AuthContext } from '../auth/context';
import { connectionFailed, diagnose } from '../databases/diagnosis';
import { driverFor } from '../databases/drivers';
import { dbDeadlines, REQUEST_DB_BUDGET_MS } from '../databases/drivers/deadline';
import { readSafety } from '../databases/run';
import { isAppError } from '../platform/errors';
import { outbox } from '../platform/events';
import { nowIso } from '../platform/ids';
import { logger } from '../platform/logger';
import { loadConnection } from './connections';
import { type ReadSafetyView, readSafetyView } from './read-safety';
import { introspect, storeIntrospected } from './schema';
import { loadSchema } from './schema-store';
import { connectionStore, NO_INDEX_KEYS, type StoredDiagnosis } from './store';
import { targetFor } from './target';

export interface TestResult {
  success: boolean;
  latency: number;
  message: string;
  schemaIntrospected: boolean;
  tableCount?: number;
  schemaError?: string;
  /** PostgreSQL: the read mode and the escapes the role reaches (read-safety.ts). */
  readSafety?: ReadSafetyView;
}

const place = (t: { type: string; host: string; port: number | null; database: string }) =>
  t.type === 'SQLITE'
    ? `SQLite file ${t.database}`
    : `${t.type} database "${t.database}" on ${t.host}${t.port ? `:${t.port}` : ''}`;

/**
 * POST /connections/{id}/test. Failure: 422 CONNECTION_FAILED with a diagnosis, and the connection becomes
 * inactive with lastError and lastErrorDiagnosis. Success: lastTestedAt set, lastError cleared, the health
 * failure count reset, and the connection reactivated unless an admin deactivated it (PATCH isActive false
 * stays in force). The first success without a cached schema also introspects and caches it; an
 * introspection failure then is reported in `schemaError` (and lastError) without failing the test.
 */
export async function testConnection(ctx: AuthContext, connectionId: string): Promise<TestResult> {
  const rec = await loadConnection(ctx, connectionId);
  const target = await targetFor(rec);
  const started = performance.now();
  let latency: number;
  try {
    const driver = await driverFor(target);
    const ping = await driver.ping();
    latency = Math.round((ping.latencyMs ?? performance.now() - started) * 10) / 10;
  } catch (e) {
    const err = connectionFailed(e, target);
    const diagnosis =
      (err.details as { diagnosis?: StoredDiagnosis } | undefined)?.diagnosis ??
      diagnose(e, target, 'CONNECT');
    const at = nowIso();
    await connectionStore.patch(
      rec.orgId,
      rec.id,
      {
        isActive: false,
        deactivatedBy: rec.isActive || rec.deactivatedBy !== 'user' ? 'test' : 'user',
        lastTestedAt: at,
        lastError: err.message,
        lastErrorDiagnosis: diagnosis,
        updatedAt: at,
        ...NO_INDEX_KEYS,
      },
      { expectVersion: rec.version },
    );
    throw err;
  }

  const at = nowIso();
  const reactivate = rec.isActive || rec.deactivatedBy !== 'user';
  const recovered = !rec.isActive && rec.deactivatedBy === 'health';
  if (reactivate) await connectionStore.ensureHealthEntry(rec.orgId, rec.id);
  const updated = await connectionStore.patch(
    rec.orgId,
    rec.id,
    {
      isActive: reactivate,
      deactivatedBy: reactivate ? null : 'user',
      lastTestedAt: at,
      lastError: null,
      lastErrorDiagnosis: null,
      healthFailures: 0,
      updatedAt: at,
      ...NO_INDEX_KEYS,
    },
    { expectVersion: rec.version },
  );
  if (updated && recovered)
    await outbox()
      .record(rec.orgId, 'connection.health.recovered', {
        connectionId: rec.id,
        name: rec.name,
        type: rec.type,
        recoveredAt: at,
        via: 'test',
        previousError: rec.lastError,
      })
      .catch((e) =>
        logger().error('recording connection.health.recovered failed', { error: (e as Error).message }),
      );

  const result: TestResult = {
    success: true,
    latency,
    message: `Connected to ${place(rec)}${rec.username ? ` as ${rec.username}` : ''}.`,
    schemaIntrospected: false,
  };
  if (rec.type === 'POSTGRES')
    try {
      // Found now (one catalog query, JIT off): the test shows the mode reads will use.
      result.readSafety = readSafetyView(await readSafety(target, { fresh: true }));
    } catch (e) {
      logger().warn('finding the escape inventory failed', {
        connectionId: rec.id,
        error: (e as Error)?.message,
      });
    }
  if (!(await loadSchema(rec.orgId, rec.id))) {
    try {
      // What is left of the request's budget after the test (the first success reads the schema too).
      const left = REQUEST_DB_BUDGET_MS - (performance.now() - started);
      const schema = await introspect(rec, target, {
        timeoutMs: Math.max(1_000, Math.min(dbDeadlines().statementMs, left)),
      });
      // The value index gets what is left of the budget, keeping 3 s for the summary and the writes.
      await storeIntrospected(ctx, rec, schema, {
        target,
        valuesMs: Math.max(0, REQUEST_DB_BUDGET_MS - (performance.now() - started) - 3_000),
      });
      result.schemaIntrospected = true;
      result.tableCount = schema.tables.length;
    } catch (e) {
      if (isAppError(e)) result.schemaError = e.message;
      else {
        logger().error('caching the schema failed', { connectionId: rec.id, error: (e as Error)?.message });
        result.schemaError =
          'The schema was read but could not be cached; retry with POST /connections/{id}/schema.';
      }
    }
  }
  return result;
}
