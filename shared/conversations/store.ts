import { config } from '../platform/config';
import { documentClient } from '../platform/db/client';
import { db, type Item, strip } from '../platform/db/store';
import { newId, nowIso, padSeq } from '../platform/ids';

/**
 * Conversations belong to one user, so they live in that user's partition and a lookup by another user
 * (or another organization) simply finds nothing:
 *  ORG#o#CONVS#u / CONV#c        the conversation; `messageCount` is the message sequence counter
 *  ORG#o#CONV#c / MSG#<seq>      its messages in order (a page is one range Query; total is the counter)
 * Deleting marks the conversation (`deletingAt`, gone for every reader), removes the messages, then the
 * conversation item; repeating a delete that was interrupted finishes it.
 */
export interface Conversation {
  id: string;
  orgId: string;
  userId: string;
  connectionId: string | null;
  title: string;
  createdAt: string;
  updatedAt: string;
}

export interface Message {
  id: string;
  conversationId: string;
  role: 'USER' | 'ASSISTANT';
  content: string;
  sqlQuery: string | null;
  resultSummary: string | null;
  promptTokens: number | null;
  completionTokens: number | null;
  model: string | null;
  createdAt: string;
}

interface ConversationItem extends Conversation {
  messageCount?: number;
  deletingAt?: string;
}

const convPk = (orgId: string, userId: string) => `ORG#${orgId}#CONVS#${userId}`;
const convSk = (id: string) => `CONV#${id}`;
const msgPk = (orgId: string, conversationId: string) => `ORG#${orgId}#CONV#${conversationId}`;
const msgSk = (seq: number) => `MSG#${padSeq(seq)}`;

const toConversation = (item: Item): Conversation => {
  const c = strip(item) as unknown as ConversationItem;
  return {
    id: c.id,
    orgId: c.orgId,
    userId: c.userId,
    connectionId: c.connectionId ?? null,
    title: c.title,
    createdAt: c.createdAt,
    updatedAt: c.updatedAt,
  };
};

const toMessage = (item: Item): Message => {
  const { type: _t, seq: _s, orgId: _o, ...rest } = strip(item) as Record<string, unknown>;
  return rest as unknown as Message;
};

export const conversationStore = {
  async create(input: {
    orgId: string;
    userId: string;
    title: string;
    connectionId: string | null;
  }): Promise<Conversation> {
    const now = nowIso();
    const conv: Conversation = { id: newId(), ...input, createdAt: now, updatedAt: now };
    await db.put(
      {
        pk: convPk(conv.orgId, conv.userId),
        sk: convSk(conv.id),
        type: 'conversation',
        ...conv,
        messageCount: 0,
      },
      { ifAbsent: true },
    );
    return conv;
  },

  /** The conversation with its message count, or undefined (missing, another user's, or being deleted). */
  async get(
    orgId: string,
    userId: string,
    id: string,
  ): Promise<(Conversation & { messageCount: number }) | undefined> {
    const item = await db.get<ConversationItem & Item>(convPk(orgId, userId), convSk(id));
    if (!item || item.deletingAt) return undefined;
    return { ...toConversation(item), messageCount: Number(item.messageCount ?? 0) };
  },

  /** The user's conversations, most recently active first (a user's list is one partition Query). */
  async list(orgId: string, userId: string, connectionId?: string): Promise<Conversation[]> {
    const items = await db.query<ConversationItem & Item>({ pk: convPk(orgId, userId), prefix: 'CONV#' });
    return items
      .filter((i) => !i.deletingAt && (connectionId === undefined || i.connectionId === connectionId))
      .map(toConversation)
      .sort((a, b) => b.updatedAt.localeCompare(a.updatedAt) || b.id.localeCompare(a.id));
  },

  async update(
    orgId: string,
    userId: string,
    id: string,
    changes: Partial<Pick<Conversation, 'title' | 'connectionId'>>,
  ): Promise<Conversation | undefined> {
    const item = await db.patch(
      convPk(orgId, userId),
      convSk(id),
      { ...changes, updatedAt: nowIso() },
      {
        condition: 'attribute_not_exists(deletingAt)',
      },
    );
    return item ? toConversation(item) : undefined;
  },

  /**
   * Appends a message: takes the next sequence number on the conversation (which must exist and not be
   * being deleted) in one conditional write, then stores the message under it.
   */
  async append(
    orgId: string,
    userId: string,
    conversationId: string,
    message: Omit<Message, 'id' | 'conversationId' | 'createdAt'> & { id?: string },
  ): Promise<Message | undefined> {
    const now = nowIso();
    const conv = await db.update<ConversationItem>({
      pk: convPk(orgId, userId),
      sk: convSk(conversationId),
      update: 'ADD messageCount :one SET updatedAt = :now',
      condition: 'attribute_exists(pk) AND attribute_not_exists(deletingAt)',
      values: { ':one': 1, ':now': now },
    });
    if (!conv) return undefined;
    const seq = Number(conv.messageCount);
    const full: Message = { ...message, id: message.id ?? newId(), conversationId, createdAt: now };
    await db.put({ pk: msgPk(orgId, conversationId), sk: msgSk(seq), type: 'message', seq, orgId, ...full });
    return full;
  },

  /** Messages with sequence numbers lo..hi, oldest first. */
  async messagesBetween(orgId: string, conversationId: string, lo: number, hi: number): Promise<Message[]> {
    if (hi < lo) return [];
    const items = await db.query({ pk: msgPk(orgId, conversationId), between: [msgSk(lo), msgSk(hi)] });
    return items.map(toMessage);
  },

  /** The latest `n` messages, oldest first. */
  async recentMessages(orgId: string, conversationId: string, n: number): Promise<Message[]> {
    const items = await db.query({
      pk: msgPk(orgId, conversationId),
      prefix: 'MSG#',
      newestFirst: true,
      limit: n,
    });
    return items.map(toMessage).reverse();
  },

  /**
   * Deletes the conversation and its messages. Returns false when there is nothing to delete. Safe to
   * repeat: an interrupted delete (the conversation already marked) is finished by the next call.
   */
  async delete(orgId: string, userId: string, id: string): Promise<boolean> {
    const pk = convPk(orgId, userId);
    const item = await db.get<ConversationItem & Item>(pk, convSk(id));
    if (!item) return false;
    if (!item.deletingAt) await db.patch(pk, convSk(id), { deletingAt: nowIso() });
    const keys = (await db.query({ pk: msgPk(orgId, id), prefix: 'MSG#' })).map((m) => ({
      pk: m.pk,
      sk: m.sk,
    }));
    await deleteAll(keys);
    await db.delete(pk, convSk(id));
    return true;
  },
};

/** Batch deletes (25 per request), retrying unprocessed items. */
async function deleteAll(keys: Array<{ pk: string; sk: string }>): Promise<void> {
  const table = config().LOUPE_TABLE_NAME;
  for (let i = 0; i < keys.length; i += 25) {
    let requests = keys.slice(i, i + 25).map((Key) => ({ DeleteRequest: { Key } }));
    for (let attempt = 0; requests.length; attempt++) {
      const out = await documentClient().send('BatchWriteItem', { RequestItems: { [table]: requests } });
      requests = (out.UnprocessedItems?.[table] ?? []) as typeof requests;
      if (requests.length && attempt >= 8)
        throw new Error('Deleting conversation messages did not complete.');
      if (requests.length) await new Promise((r) => setTimeout(r, 50 * 2 ** attempt));
    }
  }
}
