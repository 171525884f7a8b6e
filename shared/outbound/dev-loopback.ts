import { config } from '../platform/config';
import { isLoopbackAddress } from './address';

/**
 * LOUPE_DEV_ALLOW_LOOPBACK_HTTP=true (local development only): webhook destinations on this machine over
 * plain http:// are allowed, so a developer can receive workflow and event webhooks with a three-line
 * server. Only `http://localhost`, `http://127.x.y.z` and `http://[::1]` (any port) pass; every other
 * http:// URL, and every https:// URL, is judged by the usual rule. Ignored (with a warning) in Lambda
 * (LOUPE_RUNTIME=aws or AWS_LAMBDA_FUNCTION_NAME set), where it never admits anything.
 */
export function devLoopbackHttp(): boolean {
  const cfg = config();
  if (cfg.LOUPE_DEV_ALLOW_LOOPBACK_HTTP !== 'true') return false;
  if (cfg.runtime === 'aws' || cfg.AWS_LAMBDA_FUNCTION_NAME) {
    if (!warnedAws) {
      warnedAws = true;
      console.warn(
        'LOUPE_DEV_ALLOW_LOOPBACK_HTTP is set but ignored in Lambda: outbound requests are https to public addresses only.',
      );
    }
    return false;
  }
  return true;
}
let warnedAws = false;

/** The loopback address a dev http:// URL's host means (`localhost` is 127.0.0.1), or undefined. */
export function loopbackAddressOf(hostname: string): string | undefined {
  if (hostname === 'localhost') return '127.0.0.1';
  const ip = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  return isLoopbackAddress(ip) ? ip : undefined;
}

/** For the local runtime's start: announces the setting when it is on (no-op otherwise). */
export function announceDevLoopbackHttp(log: (line: string) => void): void {
  if (devLoopbackHttp())
    log(
      'WARNING: LOUPE_DEV_ALLOW_LOOPBACK_HTTP=true (development only): workflow and event webhooks may be sent over plain http:// to localhost, 127.0.0.0/8 and [::1] on this machine.',
    );
}
