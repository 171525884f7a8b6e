import { AsyncLocalStorage } from 'node:async_hooks';
import { Logger } from '@aws-lambda-powertools/logger';
import type { Context } from 'aws-lambda';
import { config } from './config';

let instance: Logger | undefined;
const invocations = new AsyncLocalStorage<Logger>();

function processLogger(): Logger {
  if (!instance) {
    const level = config().LOUPE_LOG_LEVEL;
    instance = new Logger({ serviceName: 'loupe', logLevel: level });
  }
  return instance;
}

/**
 * The structured logger (Powertools) of the current invocation: its own inside `withInvocationLogger`,
 * else the process's one (a Lambda instance runs one invocation at a time). Never pass secrets or
 * request bodies to it.
 */
export function logger(): Logger {
  return invocations.getStore() ?? processLogger();
}

/**
 * Runs one invocation with a logger of its own (a child of the process's logger), so the keys it adds
 * (the Lambda context: function name and request id; the API request id) are on its lines only. The
 * local runtime runs many invocations at once in one thread (HTTP requests, queue and scheduled
 * workers): each gets its own, and no line carries another one's context. `context`, when given, is
 * added at once (workers; the HTTP stack adds its own).
 */
export function withInvocationLogger<T>(context: Context | undefined, run: () => T): T {
  const child = processLogger().createChild();
  if (context) child.addContext(context);
  return invocations.run(child, run);
}
