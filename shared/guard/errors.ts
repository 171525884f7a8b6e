import { AppError } from '../platform/errors';

/** The guard's one refusal: 400 READ_ONLY_VIOLATION naming what was refused in `details.statementType`. */
export const readOnlyViolation = (statementType: string, message: string, extra?: Record<string, unknown>) =>
  new AppError(400, 'READ_ONLY_VIOLATION', message, { statementType, ...extra });

/** The text is more than one statement (statementType MULTIPLE_STATEMENTS). */
export const multipleStatements = (
  message = 'Only one statement can run at a time; remove the extra statements.',
) => readOnlyViolation('MULTIPLE_STATEMENTS', message);

/** `parser` could not read the text (statementType UNPARSEABLE, its reason in `details.reason`). */
export const unparseable = (parser: string, e: unknown) => {
  const reason = (e instanceof Error ? e.message : String(e)).slice(0, 300);
  return readOnlyViolation(
    'UNPARSEABLE',
    `The statement could not be verified as a single statement: ${parser} rejected it (${reason}). Only statements the parser can verify are run.`,
    { reason },
  );
};
