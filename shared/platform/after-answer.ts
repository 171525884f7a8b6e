import { logger } from './logger';

/**
 * Store writes a request starts just before it answers and does not wait for (the outcome of a query's
 * history entry, a key's lastUsedAt): see docs/internals/read-path.md. They are issued before the
 * answer leaves, so in Lambda their bytes are on the wire before the environment is frozen; this module
 * keeps them so that
 *  - a later read on the same instance waits for the ones it would read (`settled(topic)`): the caller's
 *    next request sees what its previous one wrote when the same instance serves it;
 *  - the local runtime's graceful stop waits for all of them (`settled()`) before closing the store.
 * A failure is logged (with `what`), never thrown: the answer has gone already.
 */
const pending = new Map<string, Set<Promise<unknown>>>();

export function afterAnswer(topic: string, what: string, work: Promise<unknown>): void {
  let set = pending.get(topic);
  if (!set) {
    set = new Set();
    pending.set(topic, set);
  }
  const tracked = work.then(
    () => undefined,
    (e: unknown) => logger().error(`${what} failed`, { error: (e as Error)?.message ?? String(e) }),
  );
  set.add(tracked);
  tracked.finally(() => {
    set.delete(tracked);
    if (set.size === 0 && pending.get(topic) === set) pending.delete(topic);
  });
}

/**
 * Resolves once the writes of `topic` (every topic when omitted) started so far have finished, or after
 * `maxMs` (a stuck store call must not hold a read up for longer).
 */
export async function settled(topic?: string, maxMs?: number): Promise<void> {
  const sets = topic === undefined ? [...pending.values()] : [pending.get(topic)];
  const all = sets.flatMap((s) => (s ? [...s] : []));
  if (!all.length) return;
  if (maxMs === undefined) {
    await Promise.all(all);
    return;
  }
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    Promise.all(all),
    new Promise<void>((ok) => {
      timer = setTimeout(ok, maxMs);
    }),
  ]);
  clearTimeout(timer);
}
