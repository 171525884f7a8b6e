import { describe, expect, it } from 'vitest';
import { startWorkers } from '../../infra/local/workers';
import { type PendingQueryRecord, pendingStore } from '../../shared/approvals/store';
import { listEvents } from '../../shared/platform/events';
import { newId } from '../../shared/platform/ids';
import { workerNamed } from '../../shared/platform/workers';
import { useTestStore } from '../support/store';

useTestStore('approvals-sweep');

const pending = (orgId: string, expiresAt: string): PendingQueryRecord => ({
  id: newId(),
  orgId,
  connectionId: newId(),
  connectionName: 'c',
  connectionType: 'POSTGRES',
  apiKeyId: null,
  query: 'UPDATE t SET n = 1',
  context: null,
  kind: 'write',
  statementType: 'UPDATE',
  status: 'PENDING',
  submittedBy: 'u',
  reviewedBy: null,
  reviewNote: null,
  reviewedAt: null,
  execution: null,
  resultJson: null,
  error: null,
  expiresAt,
  expiredAt: null,
  createdAt: '2026-01-01T00:00:00.000Z',
  updatedAt: '2026-01-01T00:00:00.000Z',
});

describe('the approval-expiry worker in the local runtime', () => {
  it('the local scheduler fires the real worker from the manifest, which expires due queries of every organization', async () => {
    const [orgA, orgB] = [newId(), newId()];
    const past = new Date(Date.now() - 1000).toISOString();
    const future = new Date(Date.now() + 3_600_000).toISOString();
    const a = pending(orgA, past);
    const b = pending(orgB, past);
    const c = pending(orgA, future);
    for (const q of [a, b, c]) await pendingStore.create(q);

    const def = workerNamed('approval-expiry');
    expect(def?.schedule?.expression).toBe('rate(1 minute)');
    const clock = Date.now();
    const rt = await startWorkers({ manifest: [def!], pollIntervalMs: 0, now: () => clock, log: () => {} });
    try {
      await rt.runOnce();
      expect((await pendingStore.get(orgA, a.id))?.status).toBe('EXPIRED');
      expect((await pendingStore.get(orgB, b.id))?.status).toBe('EXPIRED');
      expect((await pendingStore.get(orgA, c.id))?.status).toBe('PENDING');
      const events = [...(await listEvents(orgA)), ...(await listEvents(orgB))].filter(
        (e) => e.type === 'query.expired',
      );
      expect(events.map((e) => (e.data as { queryId: string }).queryId).sort()).toEqual([a.id, b.id].sort());
    } finally {
      await rt.stop();
      await rt.scheduler.remove('system.approval-expiry');
    }
  });
});
