export const sleep = (ms: number) => new Promise((ok) => setTimeout(ok, ms));

/** Polls `fn` every 100 ms until it returns something truthy (returned), failing after `ms`. */
export async function waitFor<T>(
  what: string,
  fn: () => Promise<T | undefined | false>,
  ms = 20_000,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}
