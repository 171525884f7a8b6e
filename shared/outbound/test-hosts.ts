import { config } from '../platform/config';
import { isLoopbackAddress } from './address';

/**
 * LOUPE_OUTBOUND_TEST_HOSTS (`hostname=ip,hostname=ip`): for the project's own tests only. Each listed
 * hostname resolves to its loopback address (127.0.0.0/8 or ::1, nothing else is accepted) and passes
 * the public-address rule, so tests can reach a local HTTPS receiver. Only hostnames: an IP literal in
 * a URL is never let through, whatever this setting says. Ignored when running in Lambda
 * (AWS_LAMBDA_FUNCTION_NAME set, or LOUPE_RUNTIME=aws); unset by default.
 */
export function parseTestHosts(raw: string): Map<string, string> {
  const map = new Map<string, string>();
  for (const entry of raw.split(',')) {
    const e = entry.trim();
    if (!e) continue;
    const eq = e.indexOf('=');
    const host = e.slice(0, eq).trim().toLowerCase();
    const ip = e.slice(eq + 1).trim();
    if (eq <= 0 || !/^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/.test(host))
      throw new Error(`Invalid configuration: LOUPE_OUTBOUND_TEST_HOSTS entry "${e}" is not hostname=ip.`);
    if (!isLoopbackAddress(ip))
      throw new Error(
        `Invalid configuration: LOUPE_OUTBOUND_TEST_HOSTS may only map hostnames to loopback addresses ("${e}").`,
      );
    map.set(host, ip);
  }
  return map;
}

let parsedFrom: string | undefined;
let parsed = new Map<string, string>();
const announced = new Set<string>();

/** The active test hosts (empty in Lambda and when unset). Announced loudly once per distinct value. */
export function testHosts(): Map<string, string> {
  const cfg = config();
  const raw = cfg.LOUPE_OUTBOUND_TEST_HOSTS?.trim();
  if (!raw) return new Map();
  if (cfg.runtime === 'aws' || cfg.AWS_LAMBDA_FUNCTION_NAME) {
    if (!announced.has(`aws:${raw}`)) {
      announced.add(`aws:${raw}`);
      console.warn(
        'LOUPE_OUTBOUND_TEST_HOSTS is set but ignored in Lambda: outbound requests are public only.',
      );
    }
    return new Map();
  }
  if (parsedFrom !== raw) {
    parsed = parseTestHosts(raw);
    parsedFrom = raw;
  }
  announceTestHosts(raw, parsed);
  return parsed;
}

function announceTestHosts(raw: string, map: Map<string, string>): void {
  if (announced.has(raw)) return;
  announced.add(raw);
  const names = [...map].map(([h, ip]) => `${h}=${ip}`).join(', ');
  const line = `WARNING: LOUPE_OUTBOUND_TEST_HOSTS is set (TEST ONLY): outbound requests to ${names} go to loopback addresses. Never set this outside the project's tests.`;
  console.warn(line);
}

/** For the local runtime's start: validates the setting and announces it when set (no-op otherwise). */
export function announceOutboundTestHosts(log: (line: string) => void): void {
  const raw = config().LOUPE_OUTBOUND_TEST_HOSTS?.trim();
  if (!raw) return;
  const map = testHosts();
  if (map.size)
    log(
      `WARNING: LOUPE_OUTBOUND_TEST_HOSTS is set (TEST ONLY): ${[...map].map(([h, ip]) => `${h}=${ip}`).join(', ')} resolve to loopback and pass the public-address rule.`,
    );
}
