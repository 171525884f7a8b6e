import ipaddr from 'ipaddr.js';

/**
 * The IPv6 forms that carry an IPv4 address in their last 32 bits, named as ipaddr.js names their
 * ranges (ipaddr.js has no range for IPv4-compatible addresses: it calls them `unicast`).
 */
export type EmbeddedForm = 'ipv4Mapped' | 'rfc6145' | 'rfc6052' | 'ipv4Compatible';

export interface EmbeddedIPv4 {
  form: EmbeddedForm;
  address: ipaddr.IPv4;
}

/**
 * The IPv4 address an IPv6 address carries, shared by the outbound HTTP rule (shared/outbound/address.ts)
 * and the database host rule (shared/databases/host-policy.ts), which judge what they get differently:
 *  - IPv4-mapped `::ffff:a.b.c.d` (`ipv4Mapped`) and IPv4-translated `::ffff:0:a.b.c.d` (`rfc6145`);
 *  - NAT64 `64:ff9b::a.b.c.d` and the local-use `64:ff9b:1::/48` (`rfc6052`; RFC 8215), the address
 *    read from the last 32 bits in both;
 *  - IPv4-compatible `::a.b.c.d` (deprecated): every address of ::/96 except `::` itself, so `::1`
 *    reads as 0.0.0.1 (in 0.0.0.0/8, which both rules refuse).
 * Undefined for every other address. 6to4 and Teredo carry their addresses elsewhere and are not
 * unwrapped here (the database rule refuses them outright).
 */
export function embeddedIPv4(a: ipaddr.IPv6): EmbeddedIPv4 | undefined {
  const bytes = a.toByteArray();
  const last = () => new ipaddr.IPv4(bytes.slice(12, 16) as [number, number, number, number]);
  const range = a.range();
  if (range === 'ipv4Mapped' || range === 'rfc6145' || range === 'rfc6052')
    return { form: range, address: last() };
  if (bytes.slice(0, 12).every((x) => x === 0) && bytes.slice(12).some((x) => x !== 0))
    return { form: 'ipv4Compatible', address: last() };
  return undefined;
}
