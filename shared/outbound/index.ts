import type { IncomingMessage } from 'node:http';
import type { LookupFunction } from 'node:net';
import { traced } from '../platform/tracing';
import { classifyAddress, isIpLiteral } from './address';
import { devLoopbackHttp, loopbackAddressOf } from './dev-loopback';
import { testHosts } from './test-hosts';

export { classifyAddress, isIpLiteral, isPublicAddress } from './address';
export { announceDevLoopbackHttp } from './dev-loopback';
export { announceOutboundTestHosts } from './test-hosts';

// Loaded on the first resolution or request, not with the module: node:https brings TLS and crypto
// (about 10 ms of a cold start), and the functions that import this module to validate URLs at
// create/update time answer most requests without sending anything.
const dns = () => process.getBuiltinModule('node:dns/promises') as typeof import('node:dns/promises');
const https = () => process.getBuiltinModule('node:https') as typeof import('node:https');
const http = () => process.getBuiltinModule('node:http') as typeof import('node:http');

/**
 * The only code that opens outbound HTTP connections (webhook actions, event webhooks).
 *
 * Validation time (`checkUrl`, synchronous): https only, port 443 only (an explicit `:443` is fine),
 * no userinfo, and a hostname (LDH labels, no trailing dot, not `localhost` / `*.localhost`) or a
 * public IP literal. The URL is parsed with the WHATWG parser first, so decimal, octal, hex, short-form
 * and percent-encoded IPv4 hosts are normalized to the dotted address they mean and judged as such.
 *
 * Resolution time (`checkDestination`, `sendOutbound`): the hostname is resolved once with the system
 * resolver (so /etc/hosts counts) and refused unless every address is public (see address.ts).
 *
 * Connect time (`sendOutbound`): the socket connects to the checked address (the request's `lookup`
 * answers with it, no second resolution), TLS is verified against the hostname (SNI and certificate
 * name), no connection pooling or proxy, redirects are never followed (a 3xx is the response), one
 * total timeout from resolution to the last byte, and the response body read up to a bound.
 *
 * Local development (`LOUPE_DEV_ALLOW_LOOPBACK_HTTP=true`, never in Lambda, see dev-loopback.ts): a plain
 * http:// URL whose host is localhost or a loopback literal also passes, on any port, and is sent to that
 * loopback address over http. Every other rule (no userinfo, headers, timeout, no redirects) still holds.
 */

/** Refused before any connection was opened: URL rule, resolution failure, or address class. */
export class OutboundRefused extends Error {
  override readonly name = 'OutboundRefused';
  constructor(
    readonly reason: string,
    /** URL: a validation-time rule; DNS: the name did not resolve; ADDRESS: a non-public address. */
    readonly code: 'URL' | 'DNS' | 'ADDRESS' = 'URL',
  ) {
    super(`Outbound request refused: ${reason}`);
  }
}

/** The destination was allowed but the exchange failed. */
export class OutboundFailed extends Error {
  override readonly name = 'OutboundFailed';
  constructor(
    readonly kind: 'TIMEOUT' | 'NETWORK' | 'TLS',
    message: string,
  ) {
    super(message);
  }
}

export interface OutboundRequest {
  url: string;
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  headers?: Record<string, string>;
  body?: string | Uint8Array;
  /** Total, from resolution to the last byte. */
  timeoutMs: number;
  /** Default 64 KiB; the rest is discarded. */
  maxResponseBytes?: number;
}

export interface OutboundResponse {
  status: number;
  /** Lower-case names; repeated headers joined with ", ". */
  headers: Record<string, string>;
  body: string;
  truncated: boolean;
  durationMs: number;
}

export const DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024;
const MAX_URL_LENGTH = 4096;
const METHODS = new Set(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']);
const LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
/** RFC 7230 token (header field name). */
export const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/**
 * A header value: printable Latin-1 without leading/trailing white space, and no control character at all
 * (C0 including TAB, CR, LF and NUL; DEL; C1 U+0080–U+009F); U+2028/U+2029 and anything above U+00FF are
 * outside Latin-1.
 */
export const HEADER_VALUE = /^[\x21-\x7e\xa0-\xff]([\x20-\x7e\xa0-\xff]*[\x21-\x7e\xa0-\xff])?$/;
/** Headers the module sets itself or that would change how the message is framed or routed. */
export const RESERVED_HEADERS = new Set([
  'host',
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'upgrade',
  'te',
  'trailer',
  'expect',
  'proxy-authorization',
  'proxy-connection',
  'http2-settings',
]);

const refuse = (reason: string): never => {
  throw new OutboundRefused(reason, 'URL');
};

/** Validation-time rules only (sync): https, port 443, no userinfo, hostname or public IP literal. */
export function checkUrl(url: string): URL {
  if (typeof url !== 'string' || !url) refuse('the URL is empty');
  if (url.length > MAX_URL_LENGTH) refuse(`the URL is longer than ${MAX_URL_LENGTH} characters`);
  if (/[\s\u0000-\u001f\u007f]/.test(url)) refuse('the URL contains white space or control characters');
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return refuse('not a valid absolute URL');
  }
  if (u.protocol === 'http:' && devLoopbackHttp()) {
    if (!loopbackAddressOf(u.hostname))
      refuse(
        'only https URLs are allowed (plain http:// only to localhost, 127.0.0.0/8 or [::1] in development)',
      );
  } else if (u.protocol !== 'https:') refuse('only https URLs are allowed');
  if (u.username || u.password) refuse('credentials in the URL (userinfo) are not allowed');
  // Also an empty userinfo (`https://:@host`, `https:@host`): the parser drops it, the intent is a trick.
  const authority = /^[a-z][a-z0-9+.-]*:[/\\]*([^/\\?#]*)/i.exec(url)?.[1] ?? '';
  if (authority.includes('@')) refuse('credentials in the URL (userinfo) are not allowed');
  if (u.protocol === 'http:') return u; // a development loopback URL, checked above
  if (u.port !== '' && u.port !== '443') refuse('only port 443 is allowed');
  const host = u.hostname;
  if (!host) refuse('the URL has no host');
  if (isIpLiteral(host)) {
    const ip = host.startsWith('[') ? host.slice(1, -1) : host;
    const v = classifyAddress(ip);
    if (!v.public) refuse(`the address ${ip} is not public (${v.range})`);
    return u;
  }
  if (host.endsWith('.')) refuse('write the hostname without a trailing dot');
  if (host.length > 253) refuse('the hostname is too long');
  const labels = host.split('.');
  if (!labels.every((l) => LABEL.test(l))) refuse('the hostname is not a valid DNS name');
  if (host === 'localhost' || host.endsWith('.localhost')) refuse('localhost names are not allowed');
  // A final label of digits only would be an IPv4 number to the URL parser; anything left is not a name.
  if (/^[0-9]+$/.test(labels[labels.length - 1])) refuse('the hostname is not a valid DNS name');
  return u;
}

interface Checked {
  url: URL;
  /** The address to connect to (the first resolved one, all of them checked). */
  address: string;
  family: 4 | 6;
}

async function resolveChecked(url: string): Promise<Checked> {
  const u = checkUrl(url);
  const host = u.hostname;
  const loopback = u.protocol === 'http:' ? loopbackAddressOf(host) : undefined;
  if (loopback) return { url: u, address: loopback, family: loopback.includes(':') ? 6 : 4 };
  if (isIpLiteral(host)) {
    const ip = host.startsWith('[') ? host.slice(1, -1) : host;
    return { url: u, address: ip, family: ip.includes(':') ? 6 : 4 };
  }
  const pinned = testHosts().get(host);
  if (pinned) return { url: u, address: pinned, family: pinned.includes(':') ? 6 : 4 };
  let addresses: { address: string; family: number }[];
  try {
    addresses = await dns().lookup(host, { all: true, order: 'verbatim' });
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? 'ERROR';
    throw new OutboundRefused(`the hostname ${host} did not resolve (${code})`, 'DNS');
  }
  if (!addresses.length) throw new OutboundRefused(`the hostname ${host} did not resolve`, 'DNS');
  for (const a of addresses) {
    const v = classifyAddress(a.address);
    if (!v.public)
      throw new OutboundRefused(
        `${host} resolves to ${a.address}, which is not public (${v.range})`,
        'ADDRESS',
      );
  }
  const first = addresses[0];
  return { url: u, address: first.address, family: first.family === 6 ? 6 : 4 };
}

/** checkUrl + resolve once + every address public (honours LOUPE_OUTBOUND_TEST_HOSTS). */
export async function checkDestination(url: string): Promise<void> {
  await resolveChecked(url);
}

function checkHeaders(headers: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  const seen = new Set<string>();
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase();
    if (!HEADER_NAME.test(name)) throw new OutboundRefused(`invalid header name`, 'URL');
    if (RESERVED_HEADERS.has(lower)) throw new OutboundRefused(`the header ${lower} cannot be set`, 'URL');
    if (seen.has(lower)) throw new OutboundRefused(`the header ${lower} is given twice`, 'URL');
    if (typeof value !== 'string' || (value !== '' && !HEADER_VALUE.test(value)))
      throw new OutboundRefused(`invalid value for the header ${lower}`, 'URL');
    seen.add(lower);
    out[name] = value;
  }
  return out;
}

const TLS_CODES =
  /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN|HOSTNAME_MISMATCH|ERR_OSSL_)/;

function failureOf(e: unknown): OutboundFailed {
  if (e instanceof OutboundFailed) return e;
  const err = e as NodeJS.ErrnoException;
  const code = err?.code ?? '';
  if (TLS_CODES.test(code)) return new OutboundFailed('TLS', `TLS verification failed (${code})`);
  return new OutboundFailed('NETWORK', `network error (${code || err?.message || 'unknown'})`);
}

/**
 * The only way to open an outbound HTTP connection. Never follows redirects. Traced as an X-Ray
 * subsegment named after the host when the invocation is sampled (the URL without its query string).
 */
export async function sendOutbound(req: OutboundRequest): Promise<OutboundResponse> {
  let url: URL | undefined;
  try {
    url = new URL(req.url);
  } catch {
    return send(req); // refused there, with the reason
  }
  return traced('outbound', url.hostname || 'outbound', () => send(req), {
    http: { method: req.method, url: `${url.protocol}//${url.host}${url.pathname}` },
  });
}

async function send(req: OutboundRequest): Promise<OutboundResponse> {
  if (!METHODS.has(req.method)) throw new OutboundRefused('unsupported method', 'URL');
  if (!Number.isFinite(req.timeoutMs) || req.timeoutMs <= 0)
    throw new OutboundRefused('timeoutMs must be a positive number', 'URL');
  const maxBytes = Math.max(0, Math.floor(req.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES));
  const headers = checkHeaders(req.headers ?? {});
  const started = performance.now();
  const deadline = started + req.timeoutMs;
  const timedOut = () =>
    new OutboundFailed('TIMEOUT', `no complete response within ${Math.round(req.timeoutMs)} ms`);

  // Resolution counts against the total timeout (a lookup cannot be cancelled; it is abandoned).
  let timer: NodeJS.Timeout | undefined;
  const checked = await Promise.race([
    resolveChecked(req.url),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(timedOut()), req.timeoutMs);
    }),
  ]).finally(() => clearTimeout(timer));

  const body =
    req.body === undefined
      ? undefined
      : typeof req.body === 'string'
        ? Buffer.from(req.body, 'utf8')
        : Buffer.from(req.body.buffer, req.body.byteOffset, req.body.byteLength);
  const host = checked.url.hostname;
  const plain = checked.url.protocol === 'http:'; // development loopback only (checkUrl)
  const literal = isIpLiteral(host);
  // Answers every lookup with the checked address: the socket goes exactly where the check looked.
  const pinnedLookup: LookupFunction = (_hostname, options, callback) => {
    const cb = callback as (...args: unknown[]) => void;
    if ((options as { all?: boolean })?.all) cb(null, [{ address: checked.address, family: checked.family }]);
    else cb(null, checked.address, checked.family);
  };

  return new Promise<OutboundResponse>((resolve, reject) => {
    let settled = false;
    let totalTimer: NodeJS.Timeout | undefined;
    const finish = (fn: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(totalTimer);
      fn();
    };
    const request = (plain ? http() : https()).request(
      {
        method: req.method,
        host: literal ? checked.address : host,
        port: plain ? Number(checked.url.port || 80) : 443,
        path: `${checked.url.pathname}${checked.url.search}`,
        ...(plain ? {} : { servername: literal ? undefined : host }),
        lookup: pinnedLookup,
        family: checked.family,
        agent: false,
        rejectUnauthorized: true,
        headers: {
          'user-agent': 'Loupe-Outbound/1',
          ...headers,
          host: checked.url.host,
          connection: 'close',
          ...(body ? { 'content-length': String(body.length) } : {}),
        },
      },
      (res: IncomingMessage) => {
        const chunks: Buffer[] = [];
        let size = 0;
        let truncated = false;
        const done = () =>
          finish(() =>
            resolve({
              status: res.statusCode ?? 0,
              headers: headersOf(res),
              body: Buffer.concat(chunks).toString('utf8'),
              truncated,
              durationMs: Math.round(performance.now() - started),
            }),
          );
        res.on('data', (chunk: Buffer) => {
          if (settled) return;
          const room = maxBytes - size;
          if (chunk.length > room) {
            if (room > 0) chunks.push(chunk.subarray(0, room));
            size = maxBytes;
            truncated = true;
            done();
            request.destroy();
            return;
          }
          chunks.push(chunk);
          size += chunk.length;
        });
        res.on('end', done);
        res.on('error', (e) => finish(() => reject(failureOf(e))));
        res.on('close', () => {
          if (!res.complete) finish(() => reject(new OutboundFailed('NETWORK', 'the response was cut off')));
        });
      },
    );
    const remaining = Math.max(1, deadline - performance.now());
    totalTimer = setTimeout(() => {
      finish(() => reject(timedOut()));
      request.destroy();
    }, remaining);
    request.on('error', (e) => finish(() => reject(failureOf(e))));
    request.end(body);
  });
}

function headersOf(res: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(res.headers)) {
    if (v === undefined) continue;
    out[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : v;
  }
  return out;
}
