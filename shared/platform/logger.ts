import { AsyncLocalStorage } from 'node:async_hooks';
import { Logger } from '@aws-lambda-powertools/logger';
import type { Context } from 'aws-lambda';
import { config } from './config';

let instance: Logger | undefined;

/** One invocation's log context; its logger is made on its first line (most invocations log nothing). */
interface Invocation {
  context?: Context;
  keys: Record<string, unknown>;
  logger?: Logger;
}
const invocations = new AsyncLocalStorage<Invocation>();

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
  const inv = invocations.getStore();
  if (!inv) return processLogger();
  if (!inv.logger) {
    const child = processLogger().createChild();
    if (inv.context) child.addContext(inv.context);
    child.appendKeys(inv.keys);
    inv.logger = child;
  }
  return inv.logger;
}

/**
 * Runs one invocation with a log context of its own (a child of the process's logger, made when it
 * first logs), so the keys it adds (the Lambda context: function name and request id; the API request
 * id) are on its lines only. The local runtime runs many invocations at once in one thread (HTTP
 * requests, queue and scheduled workers): each gets its own, and no line carries another one's context.
 */
export function withInvocationLogger<T>(context: Context | undefined, run: () => T): T {
  return invocations.run({ context, keys: {} }, run);
}

/** Puts the Lambda context (function name, request id, cold start) on this invocation's lines. */
export function addLogContext(context: Context): void {
  const inv = invocations.getStore();
  if (!inv) {
    processLogger().addContext(context);
    return;
  }
  inv.context = context;
  inv.logger?.addContext(context);
}

/** Adds keys to this invocation's lines (`resetLogKeys` removes them in a Lambda instance). */
export function appendLogKeys(keys: Record<string, unknown>): void {
  const inv = invocations.getStore();
  if (!inv) {
    processLogger().appendKeys(keys);
    return;
  }
  Object.assign(inv.keys, keys);
  inv.logger?.appendKeys(keys);
}

/** Ends an invocation's keys on the process logger (nothing to do inside `withInvocationLogger`). */
export function resetLogKeys(): void {
  if (!invocations.getStore()) processLogger().resetKeys();
}
