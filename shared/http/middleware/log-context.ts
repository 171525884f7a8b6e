import type { MiddlewareObj } from '@middy/core';
import { addLogContext, resetLogKeys } from '../../platform/logger';

/**
 * The Lambda context on the current invocation's log lines; the keys end with the invocation. Used by the
 * REST stack and the MCP endpoint alike (Powertools' injectLambdaContext would bind the logger at load
 * time, and re-reads its environment settings on every invocation).
 */
export function lambdaContext(): MiddlewareObj {
  return {
    before: (request) => addLogContext(request.context),
    after: () => resetLogKeys(),
    onError: () => resetLogKeys(),
  };
}
