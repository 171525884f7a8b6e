import { db, strip } from '../platform/db/store';
import { padSeq } from '../platform/ids';

/** At most this many webhook endpoints per organization. */
export const MAX_ENDPOINTS = 20;

export type DeliveryStatus = 'PENDING' | 'SUCCESS' | 'FAILED';

export interface EndpointRecord {
  id: string;
  orgId: string;
  url: string;
  events: string[];
  isActive: boolean;
  /** The current secret, encrypted (context: organization + endpoint). */
  secretEnc: string;
  secretLast4: string;
  /** After a rotation the old secret still signs until `previousSecretUntil`. */
  previousSecretEnc?: string | null;
  previousSecretUntil?: string | null;
  /** Sequence of this endpoint's deliveries (the last number taken). */
  deliveryCount?: number;
  createdBy: string;
  createdAt: string;
  updatedAt: string;
}

export interface DeliveryRecord {
  id: string;
  orgId: string;
  endpointId: string;
  seq: number;
  eventId: string;
  /** The event type. */
  event: string;
  /** The JSON body that is sent (and signed). */
  payload: string;
  status: DeliveryStatus;
  statusCode: number | null;
  /** Attempts started so far. */
  attempts: number;
  /** The last attempt whose outcome was recorded. */
  completed: number;
  /** An attempt in progress holds the delivery until this time (epoch ms). */
  leaseUntil?: number;
  deliveredAt: string | null;
  lastAttemptAt: string | null;
  nextAttemptAt: string | null;
  error: string | null;
  durationMs: number | null;
  createdAt: string;
  /** Times the sweep queued this delivery again since its last recorded outcome (see overdue.ts). */
  recoveries?: number;
}

/**
 * Items:
 *  ORG#o / WEBHOOK#<id>             an endpoint; `deliveryCount` is its delivery sequence counter
 *  ORG#o / WEBHOOKCOUNT             `endpoints`: how many endpoints exist (the 20-per-org limit)
 *  ORG#o#WH#<id> / SEQ#<seq>        one delivery (a page of the log is one range Query, newest first);
 *                                   while PENDING it carries gsi1pk WEBHOOKS#DUE, gsi1sk <due>#o#<id>#<seq>
 *                                   (when its next attempt is due: read by the sweep, overdue.ts)
 *  ORG#o#WH#<id> / EVT#<eventId>    the fan-out guard: one delivery per (event, endpoint)
 */
const orgPk = (orgId: string) => `ORG#${orgId}`;
const endpointSk = (id: string) => `WEBHOOK#${id}`;
const COUNT_SK = 'WEBHOOKCOUNT';
const logPk = (orgId: string, endpointId: string) => `ORG#${orgId}#WH#${endpointId}`;
const seqSk = (seq: number) => `SEQ#${padSeq(seq)}`;
const guardSk = (eventId: string) => `EVT#${eventId}`;
/** Fan-out guards are only needed while an event can still be fanned out again (the outbox keeps 30 days). */
const GUARD_TTL_SECONDS = 35 * 86_400;
/** The sparse index of pending deliveries, ordered by when their next attempt is due (all organizations). */
const DUE_PK = 'WEBHOOKS#DUE';
const dueSk = (dueIso: string, orgId: string, endpointId: string, seq: number) =>
  `${dueIso}#${orgId}#${endpointId}#${padSeq(seq)}`;
const dueIndex = (dueIso: string, orgId: string, endpointId: string, seq: number) => ({
  gsi1pk: DUE_PK,
  gsi1sk: dueSk(dueIso, orgId, endpointId, seq),
});
const notDue = { gsi1pk: undefined, gsi1sk: undefined };
/** An overdue delivery as the sweep read it: still pending, due as read, and no attempt holding it. */
const OVERDUE_CONDITION =
  '#s = :pending AND gsi1sk = :due AND (attribute_not_exists(leaseUntil) OR leaseUntil < :now)';

const asEndpoint = (item: Record<string, unknown>) => {
  const { type: _t, ...rest } = strip(item);
  return rest as unknown as EndpointRecord;
};
const asDelivery = (item: Record<string, unknown>) => {
  const { type: _t, ...rest } = strip(item);
  return rest as unknown as DeliveryRecord;
};

export interface Guard {
  deliveryId: string;
  eventId: string;
  seq?: number;
}

export const webhookStore = {
  async get(orgId: string, id: string): Promise<EndpointRecord | undefined> {
    const item = await db.get(orgPk(orgId), endpointSk(id));
    return item ? asEndpoint(item) : undefined;
  },

  /** Every endpoint of the organization (at most 20: one Query). */
  async list(orgId: string): Promise<EndpointRecord[]> {
    const items = await db.query({ pk: orgPk(orgId), prefix: 'WEBHOOK#' });
    return items.map(asEndpoint);
  },

  /** Takes one of the organization's endpoint slots; false when all 20 are used (one conditional ADD). */
  async claimSlot(orgId: string): Promise<boolean> {
    const out = await db.update({
      pk: orgPk(orgId),
      sk: COUNT_SK,
      update: 'ADD endpoints :one',
      condition: 'attribute_not_exists(endpoints) OR endpoints < :max',
      values: { ':one': 1, ':max': MAX_ENDPOINTS },
    });
    return out !== undefined;
  },

  async releaseSlot(orgId: string): Promise<void> {
    await db.update({
      pk: orgPk(orgId),
      sk: COUNT_SK,
      update: 'ADD endpoints :minus',
      condition: 'endpoints > :zero',
      values: { ':minus': -1, ':zero': 0 },
    });
  },

  async put(r: EndpointRecord): Promise<boolean> {
    return db.put({ pk: orgPk(r.orgId), sk: endpointSk(r.id), type: 'webhook', ...r }, { ifAbsent: true });
  },

  /** Applies changes (undefined removes) when the endpoint still has `expectedUpdatedAt`. */
  async update(
    orgId: string,
    id: string,
    expectedUpdatedAt: string,
    changes: Partial<EndpointRecord>,
  ): Promise<EndpointRecord | undefined> {
    const item = await db.patch(orgPk(orgId), endpointSk(id), changes, {
      condition: 'updatedAt = :expected',
      values: { ':expected': expectedUpdatedAt },
    });
    return item ? asEndpoint(item) : undefined;
  },

  async delete(orgId: string, id: string): Promise<boolean> {
    return db.delete(orgPk(orgId), endpointSk(id), { ifExists: true });
  },

  /** Takes the endpoint's next delivery number; undefined when the endpoint no longer exists. */
  async nextSeq(orgId: string, endpointId: string): Promise<number | undefined> {
    const out = await db.update<{ deliveryCount: number }>({
      pk: orgPk(orgId),
      sk: endpointSk(endpointId),
      update: 'ADD deliveryCount :one',
      condition: 'attribute_exists(pk)',
      values: { ':one': 1 },
    });
    return out ? Number(out.deliveryCount) : undefined;
  },

  // ---- fan-out guards and deliveries ----

  /** Creates the (event, endpoint) guard when absent and returns the guard as stored. */
  async claimGuard(orgId: string, endpointId: string, eventId: string, deliveryId: string): Promise<Guard> {
    const item = {
      pk: logPk(orgId, endpointId),
      sk: guardSk(eventId),
      type: 'webhook-guard',
      deliveryId,
      eventId,
      ttl: Math.floor(Date.now() / 1000) + GUARD_TTL_SECONDS,
    };
    if (await db.put(item, { ifAbsent: true })) return { deliveryId, eventId };
    const existing = await db.get<Guard>(item.pk, item.sk);
    return existing ?? { deliveryId, eventId };
  },

  /** Stores the guard's sequence number unless another writer did; returns the stored one. */
  async setGuardSeq(orgId: string, endpointId: string, eventId: string, seq: number): Promise<number> {
    const out = await db.update<Guard>({
      pk: logPk(orgId, endpointId),
      sk: guardSk(eventId),
      update: 'SET seq = :s',
      condition: 'attribute_exists(pk) AND attribute_not_exists(seq)',
      values: { ':s': seq },
    });
    if (out) return seq;
    const g = await db.get<Guard>(logPk(orgId, endpointId), guardSk(eventId));
    return Number(g?.seq ?? seq);
  },

  /** Writes a new delivery (due at once); false when that sequence number already holds one. */
  async putDelivery(d: DeliveryRecord): Promise<boolean> {
    return db.put(
      {
        pk: logPk(d.orgId, d.endpointId),
        sk: seqSk(d.seq),
        type: 'webhook-delivery',
        ...d,
        ...(d.status === 'PENDING' ? dueIndex(d.createdAt, d.orgId, d.endpointId, d.seq) : {}),
      },
      { ifAbsent: true },
    );
  },

  async getDelivery(orgId: string, endpointId: string, seq: number): Promise<DeliveryRecord | undefined> {
    const item = await db.get(logPk(orgId, endpointId), seqSk(seq));
    return item ? asDelivery(item) : undefined;
  },

  /**
   * Claims attempt `n` of a pending delivery in one conditional write: the previous attempt is the last
   * one started, or attempt `n` itself was started but its holder's lease ran out without a recorded
   * outcome (a worker that crashed mid-attempt).
   */
  async claimAttempt(
    orgId: string,
    endpointId: string,
    seq: number,
    n: number,
    now: number,
    leaseUntil: number,
  ): Promise<DeliveryRecord | undefined> {
    const item = await db.update({
      pk: logPk(orgId, endpointId),
      sk: seqSk(seq),
      update: 'SET attempts = :n, leaseUntil = :lease, lastAttemptAt = :at',
      condition:
        'attribute_exists(pk) AND #s = :pending AND (attempts = :prev OR (attempts = :n AND completed < :n AND leaseUntil < :now))',
      names: { '#s': 'status' },
      values: {
        ':n': n,
        ':prev': n - 1,
        ':lease': leaseUntil,
        ':now': now,
        ':at': new Date(now).toISOString(),
        ':pending': 'PENDING',
      },
    });
    return item ? asDelivery(item) : undefined;
  },

  /**
   * Records the outcome of attempt `n` (only once, and only while it is the attempt in progress): a
   * delivery still PENDING is due again at `nextAttemptAt`, a finished one leaves the due index.
   */
  async completeAttempt(
    orgId: string,
    endpointId: string,
    seq: number,
    n: number,
    outcome: Pick<
      DeliveryRecord,
      'status' | 'statusCode' | 'deliveredAt' | 'nextAttemptAt' | 'error' | 'durationMs'
    >,
  ): Promise<DeliveryRecord | undefined> {
    const due =
      outcome.status === 'PENDING' && outcome.nextAttemptAt
        ? dueIndex(outcome.nextAttemptAt, orgId, endpointId, seq)
        : notDue;
    const item = await db.patch(
      logPk(orgId, endpointId),
      seqSk(seq),
      { ...outcome, completed: n, leaseUntil: 0, recoveries: undefined, ...due },
      {
        condition: 'attempts = :n AND completed < :n',
        values: { ':n': n },
      },
    );
    return item ? asDelivery(item) : undefined;
  },

  /** Frees attempt `n` for another try at once (its holder failed before recording an outcome). */
  async releaseAttempt(orgId: string, endpointId: string, seq: number, n: number): Promise<void> {
    await db.update({
      pk: logPk(orgId, endpointId),
      sk: seqSk(seq),
      update: 'SET leaseUntil = :zero',
      condition: 'attempts = :n AND completed < :n',
      values: { ':zero': 0, ':n': n },
    });
  },

  /** Ends a pending delivery as FAILED without another attempt (the endpoint was deactivated). */
  async abandon(orgId: string, endpointId: string, seq: number, error: string): Promise<void> {
    await db.patch(
      logPk(orgId, endpointId),
      seqSk(seq),
      { status: 'FAILED', error, nextAttemptAt: null, ...notDue },
      { condition: '#s = :pending', names: { '#s': 'status' }, values: { ':pending': 'PENDING' } },
    );
  },

  // ---- the sweep of overdue deliveries (overdue.ts) ----

  /** Pending deliveries of every organization due before `beforeIso`, longest overdue first (one Query). */
  async overdue(beforeIso: string, limit: number): Promise<Array<{ delivery: DeliveryRecord; due: string }>> {
    const items = await db.query({ pk: DUE_PK, index: 'gsi1', between: ['0', `${beforeIso}#~`], limit });
    return items.map((i) => ({ delivery: asDelivery(i), due: String(i.gsi1sk) }));
  },

  /**
   * Takes an overdue delivery for the sweep in one conditional write (still PENDING, still due as the
   * sweep read it, no attempt holding it), counting the recovery and making it due again at `now`. The
   * delivery, or undefined when a worker or another sweep moved it on meanwhile.
   */
  async takeOverdue(d: DeliveryRecord, due: string, now: number): Promise<DeliveryRecord | undefined> {
    const item = await db.update({
      pk: logPk(d.orgId, d.endpointId),
      sk: seqSk(d.seq),
      update: 'SET gsi1sk = :next, recoveries = if_not_exists(recoveries, :zero) + :one',
      condition: OVERDUE_CONDITION,
      names: { '#s': 'status' },
      values: {
        ':next': dueSk(new Date(now).toISOString(), d.orgId, d.endpointId, d.seq),
        ':zero': 0,
        ':one': 1,
        ':pending': 'PENDING',
        ':due': due,
        ':now': now,
      },
    });
    return item ? asDelivery(item) : undefined;
  },

  /** Ends an overdue delivery FAILED, under the same condition as takeOverdue; false when it moved on. */
  async failOverdue(d: DeliveryRecord, due: string, now: number, error: string): Promise<boolean> {
    const item = await db.patch(
      logPk(d.orgId, d.endpointId),
      seqSk(d.seq),
      { status: 'FAILED', error, nextAttemptAt: null, ...notDue },
      {
        condition: OVERDUE_CONDITION,
        names: { '#s': 'status' },
        values: { ':pending': 'PENDING', ':due': due, ':now': now },
      },
    );
    return item !== undefined;
  },

  /** Deliveries with sequence numbers lo..hi, newest first (one Query). */
  async deliveriesBetween(
    orgId: string,
    endpointId: string,
    lo: number,
    hi: number,
  ): Promise<DeliveryRecord[]> {
    const items = await db.query({
      pk: logPk(orgId, endpointId),
      between: [seqSk(lo), seqSk(hi)],
      newestFirst: true,
    });
    return items.map(asDelivery);
  },

  /** Deletes an endpoint's delivery log and guards (safe to repeat). */
  async purgeLog(orgId: string, endpointId: string): Promise<number> {
    let removed = 0;
    for (;;) {
      const items = await db.query({ pk: logPk(orgId, endpointId), limit: 100 });
      if (!items.length) return removed;
      await Promise.all(items.map((i) => db.delete(i.pk, i.sk)));
      removed += items.length;
    }
  },
};
