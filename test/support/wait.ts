export const sleep = (ms: number) => new Promise((ok) => setTimeout(ok, ms));

/**
 * Polls `fn` every 100 ms until it returns something truthy (returned), failing after `ms`. The default
 * is generous (a loaded 2-core machine can take many seconds for background work) and still under
 * vitest's 60 s test timeout, so a real hang fails with this message: a passing test never waits longer.
 */
export async function waitFor<T>(
  what: string,
  fn: () => Promise<T | undefined | false>,
  ms = 45_000,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

/**
 * Rate limits count in fixed one-minute windows: a test whose calls must share one window starts them
 * with at least `marginMs` of the window left (waiting for the next window otherwise). The margin is
 * wide because a loaded machine can make a handful of calls take many seconds.
 */
export async function earlyInRateWindow(marginMs = 20_000): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < marginMs) await sleep(left + 50);
}
