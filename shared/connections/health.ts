import * as z from 'zod/mini';
import { connectionFailed, diagnose } from '../databases/diagnosis';
import { driverFor } from '../databases/drivers';
import { outbox } from '../platform/events';
import type { EventType } from '../platform/events/port';
import { nowIso } from '../platform/ids';
import { logger } from '../platform/logger';
import { queue } from '../platform/queue';
import { type ConnectionRecord, connectionStore, NO_INDEX_KEYS, type StoredDiagnosis } from './store';
import { targetFor } from './target';

/**
 * Background health checks (decisions.md §3).
 *
 * - `health-fanout` (every 5 minutes) queues one `health-check` message per checked connection of every
 *   organization, read from the ACTIVECONN index (never a table scan). The message carries the schedule
 *   slot, so a repeated message for the same slot changes nothing.
 * - `health-check` pings. Three consecutive failures deactivate an active connection (isActive false,
 *   lastError, lastErrorDiagnosis) and record `connection.health.degraded`. A success resets the count.
 * - Choice: connections that health checks deactivated stay in the index and keep being checked; a success
 *   reactivates them and records `connection.health.recovered`. Connections deactivated by an admin
 *   (PATCH isActive false) or by a failed manual test are not checked and are never reactivated here.
 * - Events are recorded at least once: the transition and its pending event are written together, the
 *   event is recorded, then the pending mark is cleared; a redelivered message finishes a pending event.
 */
export const FAILURES_TO_DEGRADE = 3;

export const HealthCheckMessage = z.object({
  orgId: z.string().check(z.minLength(1)),
  connectionId: z.string().check(z.minLength(1)),
  /** The fan-out's schedule time (ISO); orders checks and makes repeats no-ops. */
  slot: z.string().check(z.minLength(1)),
});
export type HealthCheckMessage = z.infer<typeof HealthCheckMessage>;

interface PendingEvent {
  slot: string;
  type: EventType;
  data: Record<string, unknown>;
}

/** The slot of a fan-out run: the scheduler's time, or now rounded down to 5 minutes. */
export function slotOf(scheduledTime: unknown, now = Date.now()): string {
  if (typeof scheduledTime === 'string' && !Number.isNaN(Date.parse(scheduledTime)))
    return new Date(Date.parse(scheduledTime)).toISOString();
  return new Date(Math.floor(now / 300_000) * 300_000).toISOString();
}

/** Queues a check of every connection the health index holds. Returns how many were queued. */
export async function fanOutHealthChecks(slot: string): Promise<number> {
  const targets = await connectionStore.listHealthChecked();
  for (let i = 0; i < targets.length; i += 10)
    await Promise.all(
      targets.slice(i, i + 10).map((t) =>
        queue().send(
          'health-check',
          { orgId: t.orgId, connectionId: t.id, slot } satisfies HealthCheckMessage,
          {
            dedupeId: `hc:${t.id}:${slot}`.replace(/[^\x21-\x7e]/g, '').slice(0, 128),
          },
        ),
      ),
    );
  logger().info('health checks queued', { count: targets.length, slot });
  return targets.length;
}

export type HealthOutcome =
  | 'gone'
  | 'not-checked'
  | 'repeat'
  | 'healthy'
  | 'recovered'
  | 'failed'
  | 'degraded';

const eventData = (rec: ConnectionRecord, extra: Record<string, unknown>) => ({
  connectionId: rec.id,
  name: rec.name,
  type: rec.type,
  ...extra,
});

/** Checks one connection for one slot. Idempotent per (connection, slot). */
export async function checkHealth(msg: HealthCheckMessage): Promise<HealthOutcome> {
  const rec = await connectionStore.get(msg.orgId, msg.connectionId);
  if (!rec) return 'gone';
  const pending = (rec as ConnectionRecord & { healthEvent?: PendingEvent }).healthEvent;
  if (rec.lastHealthSlot && rec.lastHealthSlot >= msg.slot) {
    if (pending?.slot === msg.slot) await flushEvent(rec.orgId, rec.id, pending);
    return 'repeat';
  }
  if (!rec.isActive && rec.deactivatedBy !== 'health') return 'not-checked';

  const target = await targetFor(rec);
  let failure: { message: string; diagnosis: StoredDiagnosis } | undefined;
  try {
    const driver = await driverFor(target);
    await driver.ping();
  } catch (e) {
    const err = connectionFailed(e, target);
    failure = {
      message: err.message,
      diagnosis:
        (err.details as { diagnosis?: StoredDiagnosis } | undefined)?.diagnosis ??
        diagnose(e, target, 'CONNECT'),
    };
  }

  const at = nowIso();
  const changes: Record<string, unknown> = { lastHealthSlot: msg.slot, lastHealthAt: at };
  let outcome: HealthOutcome;
  let event: PendingEvent | undefined;
  if (!failure) {
    changes.healthFailures = 0;
    changes.lastError = null;
    changes.lastErrorDiagnosis = null;
    outcome = 'healthy';
    if (!rec.isActive && rec.deactivatedBy === 'health') {
      Object.assign(changes, { isActive: true, deactivatedBy: null }, NO_INDEX_KEYS);
      outcome = 'recovered';
      event = {
        slot: msg.slot,
        type: 'connection.health.recovered',
        data: eventData(rec, { recoveredAt: at, previousError: rec.lastError }),
      };
    }
  } else {
    const failures = (rec.healthFailures ?? 0) + 1;
    Object.assign(changes, {
      healthFailures: failures,
      lastError: failure.message,
      lastErrorDiagnosis: failure.diagnosis,
    });
    outcome = 'failed';
    if (rec.isActive && failures >= FAILURES_TO_DEGRADE) {
      Object.assign(changes, { isActive: false, deactivatedBy: 'health' }, NO_INDEX_KEYS);
      outcome = 'degraded';
      event = {
        slot: msg.slot,
        type: 'connection.health.degraded',
        data: eventData(rec, {
          consecutiveFailures: failures,
          lastError: failure.message,
          diagnosis: failure.diagnosis,
          deactivatedAt: at,
        }),
      };
    }
  }
  if (event) changes.healthEvent = event;
  // Recovered or deactivated by health checks, it is still checked: its entry first (idempotent).
  if (outcome === 'recovered' || outcome === 'degraded')
    await connectionStore.ensureHealthEntry(rec.orgId, rec.id);
  const written = await connectionStore.patch(rec.orgId, rec.id, changes, {
    expectVersion: rec.version,
    condition: 'attribute_not_exists(lastHealthSlot) OR lastHealthSlot = :nullSlot OR lastHealthSlot < :slot',
    values: { ':slot': msg.slot, ':nullSlot': null },
  });
  // Another check of a later slot, or a settings change, got there first: this result is stale.
  if (!written) return 'repeat';
  if (event) await flushEvent(rec.orgId, rec.id, event);
  if (outcome === 'degraded' || outcome === 'recovered')
    logger().info(`connection health ${outcome}`, { orgId: rec.orgId, connectionId: rec.id });
  return outcome;
}

async function flushEvent(orgId: string, connectionId: string, event: PendingEvent) {
  await outbox().record(orgId, event.type, event.data);
  await connectionStore.patch(
    orgId,
    connectionId,
    { healthEvent: undefined },
    { condition: 'healthEvent.slot = :eventSlot', values: { ':eventSlot': event.slot } },
  );
}
