/**
 * The syntax of LOUPE_DB_DENY_CIDRS and LOUPE_DB_ALLOW_CIDRS, checked when the configuration is read:
 * exactly the entries ipaddr.js 2.5 accepts (`ipaddr.parseCIDR` for an entry with a slash, `ipaddr.parse`
 * otherwise), which shared/databases/host-policy.ts uses to parse and match them. The same rules written
 * out here so that reading the configuration does not load ipaddr.js (12.5 KiB) at every cold start; the
 * policy loads it with the first database connection. test/unit/cidr.test.ts compares both on many inputs.
 */

// ipaddr.js's IPv4 forms: 1 to 4 dot-separated parts, each decimal, octal (leading 0) or hexadecimal (0x).
const PART = '(0?\\d+|0x[a-f0-9]+)';
const IPV4 = [1, 2, 3, 4].map((n) => new RegExp(`^${Array(n).fill(PART).join('\\.')}$`, 'i'));
const ZONE = '%[0-9a-z]{1,}';
const IPV6_PART = '(?:[0-9a-f]+::?)+';
const IPV6_NATIVE = new RegExp(`^(::)?(${IPV6_PART})?([0-9a-f]+)?(::)?(${ZONE})?$`, 'i');
const IPV6_DEPRECATED_TRANSITIONAL = new RegExp(
  `^(?:::)(${PART}\\.${PART}\\.${PART}\\.${PART}(${ZONE})?)$`,
  'i',
);
const IPV6_TRANSITIONAL = new RegExp(
  `^((?:${IPV6_PART})|(?:::)(?:${IPV6_PART})?)${PART}\\.${PART}\\.${PART}\\.${PART}(${ZONE})?$`,
  'i',
);
const CIDR = /^(.+)\/(\d+)$/;

/** A part's value as ipaddr.js reads it; NaN where it refuses the part (a leading 0 not followed by octal digits). */
function partValue(s: string): number {
  if (/^0x[a-f0-9]+$/i.test(s)) return Number.parseInt(s, 16);
  if (s[0] === '0' && !Number.isNaN(Number.parseInt(s[1], 10)))
    return /^0[0-7]+$/.test(s) ? Number.parseInt(s, 8) : Number.NaN;
  return Number.parseInt(s, 10);
}

const inRange = (v: number, max: number) => v >= 0 && v <= max;

function isIpv4(s: string): boolean {
  const parts = s.split('.');
  const match = parts.length <= 4 ? IPV4[parts.length - 1].exec(s) : null;
  if (!match) return false;
  const values = match.slice(1).map(partValue);
  // The last part fills the bytes the earlier ones leave: `a.b.c.d`, `a.b.c16`, `a.b24`, `a32`.
  const last = values.pop()!;
  return values.every((v) => inRange(v, 255)) && inRange(last, 2 ** (8 * (4 - values.length)) - 1);
}

/** ipaddr.js's expandIPv6: the 16-bit groups of `s` with `::` expanded to `groups` in all, or null. */
function expandIpv6(s: string, groups: number): number[] | null {
  if (s.indexOf('::') !== s.lastIndexOf('::')) return null;
  let rest = /%[0-9a-z]{1,}/i.test(s) ? s.replace(/%.+$/, '') : s;
  let colons = rest.split(':').length - 1;
  if (rest.startsWith('::')) colons--;
  if (rest.endsWith('::')) colons--;
  if (colons >= groups) return null;
  rest = rest.replace('::', `:${'0:'.repeat(groups - colons)}`);
  if (rest.startsWith(':')) rest = rest.slice(1);
  if (rest.endsWith(':')) rest = rest.slice(0, -1);
  return rest.split(':').map((g) => (g.length > 4 ? Number.NaN : Number.parseInt(g, 16)));
}

/** ipaddr.js's IPv6 parser: the address's groups, or null. */
function ipv6Groups(s: string): number[] | null {
  const deprecated = IPV6_DEPRECATED_TRANSITIONAL.exec(s);
  if (deprecated) return ipv6Groups(`::ffff:${deprecated[1]}`);
  if (IPV6_NATIVE.test(s)) return expandIpv6(s, 8);
  const m = IPV6_TRANSITIONAL.exec(s);
  if (!m) return null;
  const head = m[1].endsWith('::') ? m[1] : m[1].slice(0, -1);
  const groups = expandIpv6(head + (m[6] || ''), 6);
  if (!groups) return null;
  // Here ipaddr.js reads the parts with parseInt and no radix: decimal, or hexadecimal after 0x (no octal).
  const octets = [m[2], m[3], m[4], m[5]].map((p) => Number.parseInt(p, /^0x/i.test(p) ? 16 : 10));
  if (!octets.every((o) => inRange(o, 255))) return null;
  return [...groups, (octets[0] << 8) | octets[1], (octets[2] << 8) | octets[3]];
}

function isIpv6(s: string): boolean {
  const groups = ipv6Groups(s);
  return groups !== null && groups.length === 8 && groups.every((g) => inRange(g, 0xffff));
}

/** `ipaddr.parseCIDR`: an IPv6 address with 0–128 bits, else an IPv4 address with 0–32. */
function isCidr(s: string): boolean {
  const m = CIDR.exec(s);
  if (!m) return false;
  const bits = Number.parseInt(m[2], 10);
  return (bits <= 128 && isIpv6(m[1])) || (bits <= 32 && isIpv4(m[1]));
}

/** `10.0.0.0/8, fd00::/8, 192.0.2.7`: every entry a CIDR or a single address (empty entries are skipped). */
export function isCidrList(v: string): boolean {
  return v.split(',').every((raw) => {
    const e = raw.trim();
    if (!e) return true;
    return e.includes('/') ? isCidr(e) : (e.includes(':') && isIpv6(e)) || isIpv4(e);
  });
}
