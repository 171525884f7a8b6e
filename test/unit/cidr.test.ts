import ipaddr from 'ipaddr.js';
import { describe, expect, it } from 'vitest';
import { isCidrList } from '../../shared/platform/cidr';

/** What the configuration accepted when it validated the lists with ipaddr.js itself. */
function ipaddrAccepts(entry: string): boolean {
  try {
    if (entry.includes('/')) ipaddr.parseCIDR(entry);
    else ipaddr.parse(entry);
    return true;
  } catch {
    return false;
  }
}

/** A small deterministic generator (mulberry32), so that a failure names an input that comes back. */
function random(seed: number) {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const KNOWN = [
  '10.0.0.0/8',
  '192.0.2.7',
  '0',
  '1.5',
  '127.1',
  '0x7f.1',
  '0x7f.0.0.1/8',
  '0177.0.0.1',
  '08.0.0.1',
  '4294967295',
  '4294967296',
  '1.16777215',
  '1.16777216',
  '1.2.65535',
  '1.2.65536',
  '256.0.0.1',
  '300.1.1.1/8',
  '1.2.3.4/32',
  '1.2.3.4/33',
  '1.2.3.4/08',
  '1e3',
  '-1',
  'fd00::/8',
  '::',
  '::/0',
  ':::',
  '::1',
  '1::',
  '1::2::3',
  '1:2:3:4:5:6:7:8',
  '1:2:3:4:5:6:7:8:9',
  '1:2:3:4:5:6:7',
  '1:2:3:4:5:6:7::',
  '::1:2:3:4:5:6:7',
  '12345::',
  'fe80::1%eth0',
  'fe80::1%',
  'fe80::1%eth0/64',
  '::ffff:1.2.3.4',
  '::ffff:1.2.3.4/120',
  '::1.2.3.4',
  '::0x1.2.3.4',
  '::010.2.3.4',
  '::256.2.3.4',
  '1:2:3:4:5:6:1.2.3.4',
  '1:2:3:4:5:6:7:1.2.3.4',
  '1::1.2.3.4%z',
  '1.2.3.4::',
  'x/33',
  '/8',
  '1.2.3.4/',
  '1.2.3.4/8/8',
  'abc',
  'a:b',
];

describe('CIDR list syntax', () => {
  it('accepts exactly the entries ipaddr.js accepts (known quirks)', () => {
    for (const e of KNOWN) expect({ e, ok: isCidrList(e) }).toEqual({ e, ok: ipaddrAccepts(e) });
  });

  it('accepts exactly the entries ipaddr.js accepts (generated entries)', () => {
    const next = random(7);
    const pick = <T>(xs: readonly T[]) => xs[Math.floor(next() * xs.length)];
    const CHARS = [...'0123456789abcdefxX:.%/ '];
    const PIECES = [
      '0',
      '1',
      '00',
      '07',
      '08',
      '255',
      '256',
      '0x',
      '0xff',
      '0x100',
      'ffff',
      '12345',
      'g',
      ':',
      '::',
      '.',
      '%',
      '%1',
      '/',
      '/0',
      '/32',
      '/33',
      '/128',
      '/129',
    ];
    const V4_PARTS = [
      '0',
      '1',
      '00',
      '010',
      '08',
      '255',
      '256',
      '0x7f',
      '0xFF',
      '0x100',
      '65535',
      '65536',
      '16777215',
      '4294967295',
      '4294967296',
    ];
    const V6_GROUPS = ['0', '1', '', 'ffff', 'FE80', '10000', '12345', 'g1'];
    const MASKS = ['', '', '/0', '/8', '/032', '/32', '/33', '/64', '/128', '/129'];
    const v4 = () => Array.from({ length: 1 + Math.floor(next() * 5) }, () => pick(V4_PARTS)).join('.');
    const v6 = () => {
      // Mostly the right number of groups (8, or 6 before an IPv4 tail), or fewer with one `::`.
      const tail = next() < 0.3;
      const full = tail ? 6 : 8;
      const count = next() < 0.5 ? full : Math.floor(next() * (full + 2));
      const groups = Array.from({ length: count }, () =>
        pick(next() < 0.8 ? ['0', '1', 'ffff', 'FE80', 'abcd'] : V6_GROUPS),
      );
      if (count < full || next() < 0.2) groups.splice(Math.floor(next() * (count + 1)), 0, '');
      let s = groups.join(':');
      if (s.startsWith(':') && !s.startsWith('::')) s = `:${s}`;
      if (s.endsWith(':') && !s.endsWith('::')) s += ':';
      if (tail) s += (s.endsWith(':') ? '' : ':') + v4();
      if (next() < 0.2) s += pick(['%eth0', '%1', '%', '%-']);
      return s;
    };
    let valid = 0;
    let checked = 0;
    for (let i = 0; i < 40_000; i++) {
      const n = 1 + Math.floor(next() * 12);
      const e = [
        () => Array.from({ length: n }, () => pick(PIECES)).join(''),
        () => Array.from({ length: n }, () => pick(CHARS)).join(''),
        () => v4() + pick(MASKS),
        () => v6() + pick(MASKS),
      ][i % 4]();
      const entry = e.trim();
      if (!entry || entry.includes(',')) continue;
      const ok = ipaddrAccepts(entry);
      expect({ entry, ok: isCidrList(entry) }).toEqual({ entry, ok });
      checked++;
      if (ok) valid++;
    }
    // Both kinds of answer are well represented.
    expect(checked).toBeGreaterThan(35_000);
    expect(valid).toBeGreaterThan(4_000);
  });

  it('checks every comma-separated entry and skips empty ones', () => {
    expect(isCidrList('10.0.0.0/8, fd00::/8 ,192.0.2.7')).toBe(true);
    expect(isCidrList('10.0.0.0/8,,')).toBe(true);
    expect(isCidrList(' , ')).toBe(true);
    expect(isCidrList('10.0.0.0/8,300.1.1.1/8')).toBe(false);
  });
});
