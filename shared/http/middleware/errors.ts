import type { MiddlewareObj } from '@middy/core';
import { type AppError, internalError, isAppError } from '../../platform/errors';
import { logger } from '../../platform/logger';
import { envelope } from '../envelope';
import { SECURITY_HEADERS } from './request-context';
import type { HttpRequest } from './state';

/** Turns any error into the envelope; a non-AppError is a bug: logged, answered 500 without internals. */
export function errorEnvelope(): MiddlewareObj {
  return {
    onError: async (request) => {
      const req = request as unknown as HttpRequest;
      const err = req.error;
      let app: AppError;
      if (isAppError(err)) app = err;
      else {
        logger().error('Unhandled error', {
          requestId: req.state?.requestId,
          error:
            err instanceof Error ? { name: err.name, message: err.message, stack: err.stack } : String(err),
        });
        app = internalError();
      }
      const requestId = req.state?.requestId ?? 'unknown';
      req.response = {
        statusCode: app.status,
        headers: {
          'Content-Type': 'application/json',
          ...SECURITY_HEADERS,
          ...(req.state?.headers ?? {}),
          ...(app.headers ?? {}),
        },
        body: JSON.stringify(
          envelope(requestId, null, {
            code: app.code,
            message: app.message,
            ...(app.details !== undefined ? { details: app.details } : {}),
          }),
        ),
      };
    },
  };
}
