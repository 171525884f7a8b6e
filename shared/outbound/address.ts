import ipaddr from 'ipaddr.js';
import { embeddedIPv4 } from '../platform/embedded-ipv4';

/**
 * Address classification for outbound requests, on top of ipaddr.js's special-range tables (no range
 * table of our own). An address is public only when ipaddr.js calls it `unicast` (IPv4), or it is a
 * global unicast IPv6 address (2000::/3) that ipaddr.js calls `unicast`. IPv6 forms that carry an
 * IPv4 address (IPv4-mapped, IPv4-translated, IPv4-compatible, NAT64 64:ff9b::/96 and
 * 64:ff9b:1::/48, 6to4, Teredo) are public only when every IPv4 address they carry is public.
 */
export interface AddressVerdict {
  public: boolean;
  /** ipaddr.js range name, or the range of the embedded IPv4 address (`ipv4Mapped(loopback)`). */
  range: string;
}

const GLOBAL_UNICAST = ipaddr.IPv6.parseCIDR('2000::/3');

const fromBytes = (b: number[]) => new ipaddr.IPv4(b as [number, number, number, number]);

function classifyV4(a: ipaddr.IPv4): AddressVerdict {
  const range = a.range();
  return { public: range === 'unicast', range };
}

/** The IPv4 addresses 6to4 and Teredo carry (the other transition forms: embeddedIPv4). */
function tunnelledV4(a: ipaddr.IPv6, range: string): ipaddr.IPv4[] | undefined {
  const bytes = a.toByteArray();
  if (range === '6to4') return [fromBytes(bytes.slice(2, 6))]; // 2002:AABB:CCDD::/48
  // 2001:0:SSSS:SSSS:flags:port:~CCCC:~CCCC (server, and the client obfuscated)
  if (range === 'teredo')
    return [fromBytes(bytes.slice(4, 8)), fromBytes(bytes.slice(12, 16).map((x) => x ^ 0xff))];
  return undefined;
}

function classifyV6(a: ipaddr.IPv6): AddressVerdict {
  const range = a.range();
  if (range === 'unspecified' || range === 'loopback') return { public: false, range };
  const embedded = embeddedIPv4(a);
  const carried = embedded ? [embedded.address] : tunnelledV4(a, range);
  if (carried) {
    const name = embedded ? embedded.form : range;
    const bad = carried.map(classifyV4).find((v) => !v.public);
    if (bad) return { public: false, range: `${name}(${bad.range})` };
    return { public: true, range: name };
  }
  if (range !== 'unicast') return { public: false, range };
  if (!a.match(GLOBAL_UNICAST)) return { public: false, range: 'notGlobalUnicast' };
  return { public: true, range };
}

/** Classifies an IP address text (dotted IPv4 or IPv6 without brackets); invalid text is not public. */
export function classifyAddress(ip: string): AddressVerdict {
  if (ipaddr.IPv4.isValidFourPartDecimal(ip)) return classifyV4(ipaddr.IPv4.parse(ip));
  if (ipaddr.IPv6.isValid(ip) && ip.includes(':')) {
    let a: ipaddr.IPv6;
    try {
      a = ipaddr.IPv6.parse(ip);
    } catch {
      return { public: false, range: 'invalid' };
    }
    if (a.zoneId) return { public: false, range: 'zoned' };
    return classifyV6(a);
  }
  return { public: false, range: 'invalid' };
}

export const isPublicAddress = (ip: string): boolean => classifyAddress(ip).public;

/** True for 127.0.0.0/8 and ::1 (the only addresses LOUPE_OUTBOUND_TEST_HOSTS may name). */
export function isLoopbackAddress(ip: string): boolean {
  if (ipaddr.IPv4.isValidFourPartDecimal(ip)) return ipaddr.IPv4.parse(ip).range() === 'loopback';
  if (ipaddr.IPv6.isValid(ip) && ip.includes(':')) return ipaddr.IPv6.parse(ip).range() === 'loopback';
  return false;
}

/** Whether a text is an IP address literal (IPv4 dotted or IPv6, brackets allowed). */
export function isIpLiteral(host: string): boolean {
  const h = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  return ipaddr.IPv4.isValidFourPartDecimal(h) || (h.includes(':') && ipaddr.IPv6.isValid(h));
}
