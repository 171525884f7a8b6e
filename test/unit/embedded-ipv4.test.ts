import ipaddr from 'ipaddr.js';
import { describe, expect, it } from 'vitest';
import { addressRefusal } from '../../shared/databases/host-policy';
import { classifyAddress } from '../../shared/outbound/address';
import { embeddedIPv4 } from '../../shared/platform/embedded-ipv4';

const unwrap = (ip: string) => {
  const e = embeddedIPv4(ipaddr.IPv6.parse(ip));
  return e && { form: e.form, address: e.address.toString() };
};

// [IPv6 address, the form, the IPv4 address it carries]
const carrying: Array<[string, string, string]> = [
  ['::ffff:127.0.0.1', 'ipv4Mapped', '127.0.0.1'],
  ['::ffff:7f00:1', 'ipv4Mapped', '127.0.0.1'],
  ['::FFFF:8.8.8.8', 'ipv4Mapped', '8.8.8.8'],
  ['0:0:0:0:0:ffff:a9fe:a9fe', 'ipv4Mapped', '169.254.169.254'],
  ['::ffff:0:127.0.0.1', 'rfc6145', '127.0.0.1'],
  ['::ffff:0:a00:1', 'rfc6145', '10.0.0.1'],
  ['64:ff9b::808:808', 'rfc6052', '8.8.8.8'],
  ['64:ff9b::127.0.0.1', 'rfc6052', '127.0.0.1'],
  ['64:ff9b:1::c0a8:1', 'rfc6052', '192.168.0.1'],
  ['64:ff9b:1:abcd::a9fe:a9fe', 'rfc6052', '169.254.169.254'],
  ['::7f00:1', 'ipv4Compatible', '127.0.0.1'],
  ['::808:808', 'ipv4Compatible', '8.8.8.8'],
  ['::a00:1', 'ipv4Compatible', '10.0.0.1'],
  ['::1', 'ipv4Compatible', '0.0.0.1'], // the loopback address also reads as ::0.0.0.1 (0.0.0.0/8)
];

const notCarrying = [
  '::', // unspecified: carries nothing
  '2002:7f00:1::', // 6to4 (unwrapped by the outbound rule itself; refused outright for databases)
  '2001:0:4136:e378:8000:63bf:3fff:fdd2', // Teredo (likewise)
  '::1:0:0', // not in ::/96
  '::ffff:1:0:0', // not in ::ffff:0:0/96 nor ::ffff:0:0:0/96
  '64:ff9b:2::808:808', // next to NAT64, not NAT64
  '2606:4700::1111',
  'fe80::7f00:1',
  'fd00:ec2::254',
  'ff02::1',
];

describe('embeddedIPv4: the IPv4 address carried by mapped, translated, NAT64 and compatible forms', () => {
  for (const [ip, form, address] of carrying)
    it(`${ip} carries ${address} (${form})`, () => {
      expect(unwrap(ip)).toEqual({ form, address });
    });

  for (const ip of notCarrying)
    it(`${ip} carries no IPv4 address here`, () => {
      expect(unwrap(ip)).toBeUndefined();
    });

  it('ipaddr.js reads the dotted text ::a.b.c.d as ::ffff:a.b.c.d: the same IPv4 address either way', () => {
    expect(unwrap('::8.8.8.8')).toEqual({ form: 'ipv4Mapped', address: '8.8.8.8' });
    expect(unwrap('::127.0.0.1')).toEqual({ form: 'ipv4Mapped', address: '127.0.0.1' });
  });

  it('the outbound rule judges every carried address as the IPv4 address itself', () => {
    for (const [ip, form, address] of carrying) {
      if (ip === '::1') continue; // judged as loopback first
      expect(classifyAddress(ip).public, ip).toBe(classifyAddress(address).public);
      const inner = classifyAddress(address);
      expect(classifyAddress(ip).range, ip).toBe(inner.public ? form : `${form}(${inner.range})`);
    }
  });

  it('the database rule judges mapped and compatible forms as the IPv4 address, and refuses NAT64 and translated forms', () => {
    for (const [ip, form, address] of carrying) {
      const refused = addressRefusal(ip, 'deployed') !== undefined;
      if (form === 'ipv4Mapped' || form === 'ipv4Compatible')
        expect(refused, ip).toBe(addressRefusal(address, 'deployed') !== undefined);
      else expect(refused, ip).toBe(true);
    }
  });
});
