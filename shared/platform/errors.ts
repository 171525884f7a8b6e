/** Typed errors. Every one maps to an envelope error in one place (shared/http/errors-middleware). */
export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: unknown,
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.name = code;
  }
}

export const badRequest = (message: string, details?: unknown) =>
  new AppError(400, 'BAD_REQUEST', message, details);
export const validationError = (message: string, details?: unknown) =>
  new AppError(400, 'VALIDATION_ERROR', message, details);
export const unauthorized = (message = 'A valid API key is required.') =>
  new AppError(401, 'UNAUTHORIZED', message);
export const forbidden = (message: string) => new AppError(403, 'FORBIDDEN', message);
export const notFound = (what = 'Resource') => new AppError(404, 'NOT_FOUND', `${what} not found.`);
export const conflict = (code: string, message: string, details?: unknown) =>
  new AppError(409, code, message, details);
export const alreadyExists = (what: string) =>
  new AppError(409, 'ALREADY_EXISTS', `${what} with that name already exists.`);
export const payloadTooLarge = () =>
  new AppError(413, 'PAYLOAD_TOO_LARGE', 'Request body exceeds the 1 MiB limit.');
export const rateLimited = (retryAfterSeconds: number, headers: Record<string, string>) =>
  new AppError(
    429,
    'RATE_LIMITED',
    'Too many requests; retry later.',
    { retryAfterSeconds },
    {
      ...headers,
      'Retry-After': String(retryAfterSeconds),
    },
  );
export const unprocessable = (code: string, message: string, details?: unknown) =>
  new AppError(422, code, message, details);
export const internalError = () =>
  new AppError(
    500,
    'INTERNAL_ERROR',
    'An unexpected error occurred. The request id identifies it in our logs.',
  );

export const isAppError = (e: unknown): e is AppError => e instanceof AppError;
