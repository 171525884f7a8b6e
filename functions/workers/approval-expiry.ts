import { sweepExpired } from '../../shared/approvals/approvals';

/** Scheduled worker (every minute): stores EXPIRED on pending queries past expiresAt, records query.expired. */
export const handler = async () => sweepExpired();
