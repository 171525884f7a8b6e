/**
 * Which addresses a database connection may reach. Deployed (in Lambda, or LOUPE_DB_HOST_POLICY=deployed),
 * addresses that are loopback, link-local (169.254.0.0/16 with the instance metadata service, fe80::/10),
 * unspecified, multicast or broadcast are refused, as are the AWS metadata address fd00:ec2::254 and IPv6
 * forms that embed an IPv4 address (NAT64, 6to4, Teredo); private ranges stay allowed (databases live
 * there). Locally (LOUPE_DB_HOST_POLICY=local, the default outside Lambda) loopback is allowed: a laptop's
 * own database. LOUPE_DB_ALLOW_CIDRS lets addresses through that the class rule would refuse;
 * LOUPE_DB_DENY_CIDRS refuses addresses in either mode, and wins over the allow list.
 *
 * The check runs on the resolved address at connect time: every driver connects through `checkedLookup`
 * (a `dns.lookup` replacement handed to net.connect), so the socket goes to exactly the address that was
 * checked, for every new pooled connection, and TLS is still verified against the host name. IP literals
 * (which net.connect does not resolve) are checked with `assertAddressAllowed` first. Classification uses
 * ipaddr.js; `::ffff:127.0.0.1` counts as 127.0.0.1, and the numeric forms getaddrinfo accepts
 * (`2130706433`, `0x7f.1`, `127.1`) are checked on the address they resolve to.
 */
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { isIP, Socket } from 'node:net';
import ipaddr from 'ipaddr.js';
import { config } from '../platform/config';
import { embeddedIPv4 } from '../platform/embedded-ipv4';

export class HostRefusedError extends Error {
  readonly code = 'LOUPE_HOST_REFUSED';
  constructor(readonly host: string) {
    super(
      `Loupe does not connect to "${host}": it resolves to an address outside the ranges allowed for database connections.`,
    );
    this.name = 'HostRefusedError';
  }
}

export type HostPolicyMode = 'deployed' | 'local';

export function hostPolicyMode(): HostPolicyMode {
  const c = config();
  return c.LOUPE_DB_HOST_POLICY ?? (c.runtime === 'aws' ? 'deployed' : 'local');
}

type Cidr = [ipaddr.IPv4 | ipaddr.IPv6, number];

const cidrCache = new Map<string, Cidr[]>();
/** Parses a comma-separated CIDR list (a bare address is a /32 or /128); throws naming a bad entry. */
export function parseCidrs(list: string | undefined, name = 'CIDR list'): Cidr[] {
  const key = list ?? '';
  const hit = cidrCache.get(key);
  if (hit) return hit;
  const out: Cidr[] = [];
  for (const raw of key.split(',')) {
    const entry = raw.trim();
    if (!entry) continue;
    try {
      if (entry.includes('/')) {
        const [addr, bits] = ipaddr.parseCIDR(entry);
        out.push([
          normalize(addr),
          addr.kind() === 'ipv6' && normalize(addr).kind() === 'ipv4' ? bits - 96 : bits,
        ]);
      } else {
        const addr = normalize(ipaddr.parse(entry));
        out.push([addr, addr.kind() === 'ipv4' ? 32 : 128]);
      }
    } catch {
      throw new Error(`Invalid configuration: ${name} has an entry that is not a CIDR: "${entry}".`);
    }
  }
  cidrCache.set(key, out);
  return out;
}

/** The IPv4 address an IPv6 address carries in the given form (embeddedIPv4), else undefined. */
const carried = (a: ipaddr.IPv4 | ipaddr.IPv6, form: 'ipv4Mapped' | 'ipv4Compatible') => {
  const e = a.kind() === 'ipv6' ? embeddedIPv4(a as ipaddr.IPv6) : undefined;
  return e?.form === form ? e.address : undefined;
};

/** IPv4-mapped IPv6 addresses are treated as the IPv4 address they carry. */
const normalize = (a: ipaddr.IPv4 | ipaddr.IPv6): ipaddr.IPv4 | ipaddr.IPv6 => carried(a, 'ipv4Mapped') ?? a;

const inAny = (a: ipaddr.IPv4 | ipaddr.IPv6, cidrs: Cidr[]) =>
  cidrs.some(([net, bits]) => net.kind() === a.kind() && a.match(net as never, bits));

const DENIED_V4 = new Set(['loopback', 'linkLocal', 'unspecified', 'multicast', 'broadcast']);
const DENIED_V6 = new Set([
  'loopback',
  'linkLocal',
  'unspecified',
  'multicast',
  'rfc6052', // NAT64 64:ff9b::/96 embeds an IPv4 address
  'rfc6145',
  '6to4', // 2002::/16 embeds an IPv4 address
  'teredo',
]);
/** AWS instance metadata over IPv6, inside the otherwise allowed unique-local range. */
const METADATA_V6 = ipaddr.parse('fd00:ec2::254') as ipaddr.IPv6;

/** Why an address is refused under the current policy, or undefined when it is allowed. */
export function addressRefusal(address: string, mode: HostPolicyMode = hostPolicyMode()): string | undefined {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = normalize(ipaddr.parse(address));
  } catch {
    return 'not an IP address';
  }
  const c = config();
  if (inAny(parsed, parseCidrs(c.LOUPE_DB_DENY_CIDRS, 'LOUPE_DB_DENY_CIDRS')))
    return 'denied by the operator';
  if (mode === 'local') return undefined;
  if (inAny(parsed, parseCidrs(c.LOUPE_DB_ALLOW_CIDRS, 'LOUPE_DB_ALLOW_CIDRS'))) return undefined;
  if (parsed.kind() === 'ipv6') {
    const v6 = parsed as ipaddr.IPv6;
    if (v6.toNormalizedString() === METADATA_V6.toNormalizedString()) return 'metadata';
    // IPv4-compatible ::a.b.c.d (deprecated): judged by the IPv4 address it carries.
    const compatible = carried(v6, 'ipv4Compatible');
    if (compatible) return addressRefusal(compatible.toString(), mode);
    const range = v6.range();
    return DENIED_V6.has(range) ? range : undefined;
  }
  const range = (parsed as ipaddr.IPv4).range();
  return DENIED_V4.has(range) ? range : undefined;
}

/** Throws HostRefusedError when the address (an IP literal) is refused; `host` is what the user wrote. */
export function assertAddressAllowed(address: string, host = address): void {
  if (addressRefusal(address) !== undefined) throw new HostRefusedError(host);
}

type LookupCallback = (
  err: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/**
 * A drop-in for dns.lookup (the `lookup` option of net.connect): resolves every address of the host,
 * refuses the connection when any of them is refused (no choosing among a mix), and hands back only
 * checked addresses, so the socket connects to an address that passed.
 */
export function checkedLookup(
  hostname: string,
  options: LookupOptions | number,
  callback: LookupCallback,
): void {
  const opts: LookupOptions = typeof options === 'number' ? { family: options } : { ...(options ?? {}) };
  const wantAll = opts.all === true;
  dnsLookup(hostname, { ...opts, all: true }, (err, addresses) => {
    if (err) return callback(err, wantAll ? [] : '', undefined);
    const list = addresses as LookupAddress[];
    if (list.length === 0 || list.some((a) => addressRefusal(a.address) !== undefined))
      return callback(new HostRefusedError(hostname) as NodeJS.ErrnoException, wantAll ? [] : '', undefined);
    if (wantAll) return callback(null, list);
    callback(null, list[0].address, list[0].family);
  });
}

/** Judges a host written as an IP literal (also `[::1]` and the numeric forms ipaddr.js reads); names pass. */
export function assertLiteralAllowed(host: string): void {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  if (isIP(bare)) assertAddressAllowed(bare, host);
  else if (ipaddr.isValid(bare)) assertAddressAllowed(ipaddr.parse(bare).toString(), host);
}

/**
 * Checks a host before a driver is created: an IP literal (standard or the numeric forms ipaddr.js reads,
 * such as `2130706433`) is judged at once; a name is resolved and judged, and checked again on every
 * connect through checkedLookup.
 */
export async function assertHostAllowed(host: string): Promise<void> {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  if (isIP(bare) || ipaddr.isValid(bare)) return assertLiteralAllowed(host);
  await new Promise<void>((resolve, reject) =>
    checkedLookup(bare, { all: true }, (err) => (err ? reject(err) : resolve())),
  );
}

/**
 * A socket whose `connect(port, host)` goes through checkedLookup (for clients such as pg that call
 * connect with a host and offer no lookup option).
 */
export function checkedSocket(): Socket {
  const socket = new Socket();
  const connect = socket.connect.bind(socket) as (o: unknown) => Socket;
  (socket as unknown as { connect: (port: number | string, host?: string) => Socket }).connect = (
    port,
    host,
  ) => {
    // A Unix socket path (pg's form for a host starting with "/"): the machine itself, like loopback.
    if (typeof port === 'string' && host === undefined) {
      if (hostPolicyMode() === 'deployed' || addressRefusal('127.0.0.1') !== undefined) {
        process.nextTick(() => socket.destroy(new HostRefusedError(port)));
        return socket;
      }
      return connect({ path: port });
    }
    host = host ?? 'localhost';
    const refused = isIP(host) && addressRefusal(host) !== undefined;
    if (refused) {
      process.nextTick(() => socket.destroy(new HostRefusedError(host)));
      return socket;
    }
    return connect({ port: Number(port), host, lookup: checkedLookup });
  };
  return socket;
}
