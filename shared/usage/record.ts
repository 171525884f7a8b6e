import { newId, nowIso } from '../platform/ids';
import { logger } from '../platform/logger';
import { count } from '../platform/measures';
import { costOf } from './prices';
import { type UsageFeature, type UsageRecord, usageStore } from './store';

export interface UsageInput {
  feature: UsageFeature;
  model: string;
  promptTokens: number;
  completionTokens: number;
}

/**
 * Accounts for one model call: prices it, deducts the cost from the user's balance and takes the
 * record's sequence number in one conditional atomic write, then stores the UsageRecord. The balance
 * may go below zero by the cost of calls already under way; the next AI operation is then refused (402).
 */
export async function recordUsage(
  who: { orgId: string; userId: string },
  input: UsageInput,
): Promise<UsageRecord> {
  const promptTokens = Math.max(0, Math.round(input.promptTokens));
  const completionTokens = Math.max(0, Math.round(input.completionTokens));
  const record: UsageRecord = {
    id: newId(),
    orgId: who.orgId,
    userId: who.userId,
    model: input.model,
    promptTokens,
    completionTokens,
    costCents: costOf(input.model, promptTokens, completionTokens),
    feature: input.feature,
    createdAt: nowIso(),
  };
  let out = await usageStore.adjust(who.orgId, who.userId, -record.costCents, true);
  if (!out) {
    await usageStore.ensureBalance(who.orgId, who.userId);
    out = await usageStore.adjust(who.orgId, who.userId, -record.costCents, true);
  }
  if (!out) throw new Error('Usage could not be charged: the balance item is missing.');
  await usageStore.putRecord(out.usageCount, record);
  const feature = record.feature;
  count('aiTokens', { feature, kind: 'prompt' }, promptTokens);
  count('aiTokens', { feature, kind: 'completion' }, completionTokens);
  count('aiSpend', { feature }, record.costCents);
  logger().info('model usage', {
    orgId: who.orgId,
    userId: who.userId,
    feature: record.feature,
    model: record.model,
    promptTokens,
    completionTokens,
    costCents: record.costCents,
  });
  return record;
}

/** One page of a user's usage records, newest first (one range Query; total is the record counter). */
export async function listUsage(orgId: string, userId: string, page: number, pageSize: number) {
  const total = (await usageStore.balance(orgId, userId))?.usageCount ?? 0;
  const hi = total - (page - 1) * pageSize;
  const items =
    hi >= 1 ? await usageStore.recordsBetween(orgId, userId, Math.max(1, hi - pageSize + 1), hi) : [];
  return { items, total };
}
