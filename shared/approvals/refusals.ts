/** The guard's refusals for text that is not exactly one verifiable statement. */
import { readOnlyViolation } from '../connections/guard/errors';

export const multiple = (message = 'Only one statement can run at a time; remove the extra statements.') =>
  readOnlyViolation('MULTIPLE_STATEMENTS', message);

export const unparseable = (parser: string, e: unknown) => {
  const reason = (e instanceof Error ? e.message : String(e)).slice(0, 300);
  return readOnlyViolation(
    'UNPARSEABLE',
    `The statement could not be verified as a single statement: ${parser} rejected it (${reason}). Only statements the parser can verify are run.`,
    { reason },
  );
};
