import { AppError } from '../../platform/errors';

/** The guard's one refusal: 400 READ_ONLY_VIOLATION naming what was refused in `details.statementType`. */
export const readOnlyViolation = (statementType: string, message: string, extra?: Record<string, unknown>) =>
  new AppError(400, 'READ_ONLY_VIOLATION', message, { statementType, ...extra });
