import { createHash } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { config } from '../config';
import { documentClient } from '../db/client';
import { db, isConditionFailure } from '../db/store';
import { newId } from '../ids';
import { workers as manifest, type WorkerDef } from '../workers';
import { checkSend } from './limits';
import type { Queue } from './port';

/** A message as the local runtime receives it (the fields an SQS record carries). */
export interface ReceivedMessage {
  id: string;
  /** The JSON text that was sent. */
  body: string;
  md5: string;
  /** Deliveries so far, this one included. */
  receiveCount: number;
  sentAt: number;
  firstReceivedAt: number;
  /** Identifies this delivery; acknowledging or failing it with an older receipt does nothing. */
  receipt: string;
  dedupeId?: string;
}

export interface DeadLetter extends Omit<ReceivedMessage, 'receipt'> {
  queue: string;
  deadAt: number;
  lastError?: string;
}

type MessageItem = {
  pk: string;
  sk: string;
  gsi1pk: string;
  gsi1sk: string;
  id: string;
  body: string;
  md5: string;
  visibleAt: number;
  receiveCount: number;
  sentAt: number;
  firstReceivedAt?: number;
  receipt?: string;
  dedupeId?: string;
};

/** How long a dedupeId suppresses repeated sends (as SQS FIFO's deduplication interval). */
export const DEDUPE_WINDOW_MS = 5 * 60_000;

const pad = (ms: number) => String(Math.max(0, Math.floor(ms))).padStart(15, '0');
const messagePk = (queue: string) => `QUEUE#${queue}`;
const visiblePk = (queue: string) => `QUEUEVISIBLE#${queue}`;
const deadPk = (queue: string) => `QUEUE#${queue}#DLQ`;
const dedupePk = (queue: string) => `QUEUE#${queue}#DEDUPE`;
const visibleSk = (visibleAt: number, id: string) => `${pad(visibleAt)}#${id}`;

/** In-process signal: a message was sent to a queue (lets the local runtime poll at once). */
export const localQueueSignals = new EventEmitter();
localQueueSignals.setMaxListeners(0);

/**
 * Backoff before a failed message is visible again: 1 s, 2 s, 4 s, … doubling per receive, never more
 * than the visibility timeout (after which SQS itself would redeliver it).
 */
export const retryDelaySeconds = (receiveCount: number, visibilityTimeoutSeconds: number) =>
  Math.min(visibilityTimeoutSeconds, 2 ** Math.max(0, Math.min(receiveCount - 1, 20)));

/**
 * A durable queue kept in the main table, so that it survives restarts: one item per message, found
 * through gsi1 ordered by the time it becomes visible. Receiving claims each message with one
 * conditional write (visible now → invisible until the visibility timeout, receive count + 1), so two
 * pollers never both get it. Failed messages come back after a backoff; a message received
 * `maxReceiveCount` times and failed again moves to the queue's dead-letter partition.
 */
export class LocalQueue implements Queue {
  private readonly workers: WorkerDef[];
  private readonly now: () => number;

  constructor(opts: { workers?: WorkerDef[]; now?: () => number } = {}) {
    this.workers = opts.workers ?? manifest;
    this.now = opts.now ?? Date.now;
  }

  /** Queue.send: only to a queue worker of the manifest. */
  async send(worker: string, body: unknown, opts: { delaySeconds?: number; dedupeId?: string } = {}) {
    const def = this.workers.find((w) => w.name === worker);
    if (!def?.queue) throw new Error(`No queue worker named "${worker}" in the worker manifest.`);
    await this.enqueue(worker, body, opts);
  }

  /**
   * Adds a message to the named queue (any name; the local runtime also keeps internal queues).
   * Returns the message id, or undefined when `dedupeId` was already used within the window.
   */
  async enqueue(
    queue: string,
    body: unknown,
    opts: { delaySeconds?: number; dedupeId?: string } = {},
  ): Promise<string | undefined> {
    const text = checkSend(body, opts);
    const now = this.now();
    if (opts.dedupeId) {
      const fresh = await db.put(
        {
          pk: dedupePk(queue),
          sk: opts.dedupeId,
          expiresAt: now + DEDUPE_WINDOW_MS,
          ttl: Math.ceil((now + DEDUPE_WINDOW_MS) / 1000) + 3600,
        },
        {
          condition: 'attribute_not_exists(pk) OR expiresAt <= :now',
          values: { ':now': now },
        },
      );
      if (!fresh) return undefined;
    }
    const id = newId();
    const visibleAt = now + (opts.delaySeconds ?? 0) * 1000;
    const item: MessageItem = {
      pk: messagePk(queue),
      sk: `MSG#${id}`,
      gsi1pk: visiblePk(queue),
      gsi1sk: visibleSk(visibleAt, id),
      id,
      body: text,
      md5: createHash('md5').update(text).digest('hex'),
      visibleAt,
      receiveCount: 0,
      sentAt: now,
      dedupeId: opts.dedupeId,
    };
    await db.put(item);
    localQueueSignals.emit('sent', queue);
    return id;
  }

  /**
   * Receives up to `max` visible messages, each made invisible for `visibilityTimeoutSeconds`.
   * A message that was already received `maxReceiveCount` times (its last delivery never came back)
   * goes to the dead-letter partition instead of being delivered again.
   */
  async receive(
    queue: string,
    opts: { max: number; visibilityTimeoutSeconds: number; maxReceiveCount: number },
  ): Promise<ReceivedMessage[]> {
    return (await this.receiveAndLook(queue, opts)).messages;
  }

  /**
   * receive, and the earliest time a message not received now becomes visible (a delayed message, a
   * retry after its backoff, one in flight whose visibility timeout runs out), when the same query saw
   * one: the local runtime sleeps until then instead of polling (infra/local/workers.ts).
   */
  async receiveAndLook(
    queue: string,
    opts: { max: number; visibilityTimeoutSeconds: number; maxReceiveCount: number },
  ): Promise<{ messages: ReceivedMessage[]; nextVisibleAt?: number }> {
    const now = this.now();
    // In visibility order: the visible messages first, then the first one that is not visible yet.
    const items = await db.query<MessageItem>({
      pk: visiblePk(queue),
      index: 'gsi1',
      limit: opts.max * 2 + 1,
    });
    const candidates = items.filter((i) => i.visibleAt <= now);
    const nextVisibleAt = items.find((i) => i.visibleAt > now)?.visibleAt;
    const out: ReceivedMessage[] = [];
    for (const c of candidates) {
      if (out.length >= opts.max) break;
      const invisibleUntil = now + opts.visibilityTimeoutSeconds * 1000;
      const receipt = newId();
      const claimed = await db.update<MessageItem>({
        pk: c.pk,
        sk: c.sk,
        update:
          'SET visibleAt = :until, gsi1sk = :g, receipt = :r, firstReceivedAt = if_not_exists(firstReceivedAt, :now) ADD receiveCount :one',
        condition: 'attribute_exists(pk) AND visibleAt <= :now',
        values: {
          ':until': invisibleUntil,
          ':g': visibleSk(invisibleUntil, c.id),
          ':r': receipt,
          ':now': now,
          ':one': 1,
        },
      });
      if (!claimed) continue; // another poller got it, or it was deleted
      const message = toReceived(claimed);
      if (claimed.receiveCount > opts.maxReceiveCount) {
        await this.deadLetter(queue, message, 'visibility timeout expired on the last allowed receive');
        continue;
      }
      out.push(message);
    }
    return { messages: out, nextVisibleAt };
  }

  /** Deletes a processed message (only while `message.receipt` is its current delivery). */
  async ack(queue: string, message: Pick<ReceivedMessage, 'id' | 'receipt'>): Promise<boolean> {
    try {
      await documentClient().send('DeleteItem', {
        TableName: config().LOUPE_TABLE_NAME,
        Key: { pk: messagePk(queue), sk: `MSG#${message.id}` },
        ConditionExpression: 'receipt = :r',
        ExpressionAttributeValues: { ':r': message.receipt },
      });
      return true;
    } catch (e) {
      if (isConditionFailure(e)) return false;
      throw e;
    }
  }

  /**
   * Reports a failed delivery: the message comes back after the backoff, or moves to the
   * dead-letter partition when it has been received `maxReceiveCount` times.
   */
  async fail(
    queue: string,
    message: ReceivedMessage,
    opts: { visibilityTimeoutSeconds: number; maxReceiveCount: number; error?: string },
  ): Promise<'retry' | 'dead'> {
    if (message.receiveCount >= opts.maxReceiveCount) {
      await this.deadLetter(queue, message, opts.error);
      return 'dead';
    }
    const visibleAt =
      this.now() + retryDelaySeconds(message.receiveCount, opts.visibilityTimeoutSeconds) * 1000;
    await db.update({
      pk: messagePk(queue),
      sk: `MSG#${message.id}`,
      update: 'SET visibleAt = :v, gsi1sk = :g, lastError = :e REMOVE receipt',
      condition: 'receipt = :r',
      values: {
        ':v': visibleAt,
        ':g': visibleSk(visibleAt, message.id),
        ':e': (opts.error ?? 'failed').slice(0, 1000),
        ':r': message.receipt,
      },
    });
    return 'retry';
  }

  /**
   * Gives a message back without a verdict (the process is stopping while its handler still runs): it is
   * visible again at once, for the next start, its receive count unchanged. False when it is no longer
   * this delivery's (acknowledged, failed or received again meanwhile).
   */
  async release(queue: string, message: Pick<ReceivedMessage, 'id' | 'receipt'>): Promise<boolean> {
    const now = this.now();
    const done = await db.update({
      pk: messagePk(queue),
      sk: `MSG#${message.id}`,
      update: 'SET visibleAt = :v, gsi1sk = :g REMOVE receipt',
      condition: 'receipt = :r',
      values: { ':v': now, ':g': visibleSk(now, message.id), ':r': message.receipt },
    });
    return done !== undefined;
  }

  private async deadLetter(queue: string, message: ReceivedMessage, error?: string): Promise<void> {
    // Copy first, then delete: a crash in between leaves the message to be moved again (same item).
    const { receipt, ...rest } = message;
    await db.put({
      pk: deadPk(queue),
      sk: `MSG#${message.id}`,
      queue,
      ...rest,
      deadAt: this.now(),
      lastError: error?.slice(0, 1000),
    });
    await this.ack(queue, { id: message.id, receipt });
  }

  /** Messages still in the queue (visible or in flight), oldest id order; for tests and the operator. */
  async pending(queue: string): Promise<Array<ReceivedMessage & { visibleAt: number }>> {
    const items = await db.query<MessageItem>({ pk: messagePk(queue), prefix: 'MSG#' });
    return items.map((i) => ({ ...toReceived(i), visibleAt: i.visibleAt }));
  }

  /** Messages moved to the dead-letter partition. */
  async deadLetters(queue: string): Promise<DeadLetter[]> {
    const items = await db.query<DeadLetter & { pk: string; sk: string }>({
      pk: deadPk(queue),
      prefix: 'MSG#',
    });
    return items.map(({ pk: _pk, sk: _sk, ...rest }) => rest as DeadLetter);
  }

  /** The earliest time a message of this queue becomes visible, if any is waiting. */
  async nextVisibleAt(queue: string): Promise<number | undefined> {
    const [first] = await db.query<MessageItem>({ pk: visiblePk(queue), index: 'gsi1', limit: 1 });
    return first?.visibleAt;
  }
}

function toReceived(i: MessageItem): ReceivedMessage {
  return {
    id: i.id,
    body: i.body,
    md5: i.md5,
    receiveCount: i.receiveCount,
    sentAt: i.sentAt,
    firstReceivedAt: i.firstReceivedAt ?? i.sentAt,
    receipt: i.receipt ?? '',
    dedupeId: i.dedupeId,
  };
}
