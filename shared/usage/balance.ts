import { authStore } from '../auth/store';
import { AppError, notFound } from '../platform/errors';
import { usageStore } from './store';

export const CREDITS_EXHAUSTED_MESSAGE =
  'Your balance is used up, so no AI operation can start. An operator can top it up with `loupe balance add`.';

/** The user's remaining balance in cents (a user without a balance item gets the starting balance). */
export async function remainingCents(orgId: string, userId: string): Promise<number> {
  let b = await usageStore.balance(orgId, userId);
  if (!b) {
    await usageStore.ensureBalance(orgId, userId);
    b = await usageStore.balance(orgId, userId);
  }
  return b?.remaining ?? 0;
}

/** 402 CREDITS_EXHAUSTED when the balance is not above zero; called before any model call is made. */
export async function assertCredits(orgId: string, userId: string): Promise<number> {
  const remaining = await remainingCents(orgId, userId);
  if (!(remaining > 0))
    throw new AppError(402, 'CREDITS_EXHAUSTED', CREDITS_EXHAUSTED_MESSAGE, { remaining, currency: 'USD' });
  return remaining;
}

/**
 * Tops up (or, with a negative amount, reduces) a user's balance by `cents` in one atomic write, and
 * returns the new balance. Used by the operator tool (`loupe balance add`). 404 when the user does not
 * exist in that organization.
 */
export async function addBalance(
  orgId: string,
  userId: string,
  cents: number,
): Promise<{ remaining: number }> {
  if (!Number.isFinite(cents))
    throw new AppError(400, 'VALIDATION_ERROR', 'The amount must be a finite number of cents.');
  const user = await authStore.getUser(orgId, userId);
  if (!user) throw notFound('User');
  let out = await usageStore.adjust(orgId, userId, cents, false);
  if (!out) {
    await usageStore.ensureBalance(orgId, userId);
    out = await usageStore.adjust(orgId, userId, cents, false);
  }
  if (!out) throw new Error('Balance item could not be created.');
  return { remaining: out.remaining };
}

/** The Budget resource: a non-expiring individual balance in USD cents. */
export async function budgetOf(orgId: string, userId: string) {
  return {
    remaining: await remainingCents(orgId, userId),
    currency: 'USD' as const,
    expires: false as const,
    periodStart: null,
    periodEnd: null,
  };
}
