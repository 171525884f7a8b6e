/** The nesting limit for JSON that users send (queries, configs): deeper documents are refused with a 400. */
export const MAX_JSON_DEPTH = 100;

/**
 * True when a parsed JSON value nests arrays/objects more than `max` levels deep. Iterative (an explicit
 * stack), so a 10,000-level document is measured without recursion; it stops at the first path too deep.
 */
export function nestedDeeperThan(value: unknown, max: number = MAX_JSON_DEPTH): boolean {
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop() as [unknown, number];
    if (v === null || typeof v !== 'object') continue;
    if (depth + 1 > max) return true;
    const children = Array.isArray(v) ? v : Object.values(v as Record<string, unknown>);
    for (const c of children) if (c !== null && typeof c === 'object') stack.push([c, depth + 1]);
  }
  return false;
}
