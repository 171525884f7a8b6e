import { createServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  addressRefusal,
  assertHostAllowed,
  checkedSocket,
  HostRefusedError,
  parseCidrs,
} from '../../shared/databases/host-policy';
import { resetConfig } from '../../shared/platform/config';

const setEnv = (vars: Record<string, string | undefined>) => {
  for (const [k, v] of Object.entries(vars)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  resetConfig();
};
afterEach(() =>
  setEnv({
    LOUPE_DB_HOST_POLICY: undefined,
    LOUPE_DB_ALLOW_CIDRS: undefined,
    LOUPE_DB_DENY_CIDRS: undefined,
  }),
);

// [address, refused when deployed, refused locally]
const table: Array<[string, boolean, boolean]> = [
  ['127.0.0.1', true, false],
  ['127.255.255.254', true, false],
  ['::1', true, false],
  ['::ffff:127.0.0.1', true, false],
  ['::ffff:7f00:1', true, false],
  ['::7f00:1', true, false], // IPv4-compatible form of 127.0.0.1
  ['169.254.169.254', true, false],
  ['169.254.0.1', true, false],
  ['::ffff:169.254.169.254', true, false],
  ['fe80::1', true, false],
  ['fd00:ec2::254', true, false],
  ['0.0.0.0', true, false],
  ['0.1.2.3', true, false],
  ['::', true, false],
  ['224.0.0.1', true, false],
  ['239.255.255.250', true, false],
  ['ff02::1', true, false],
  ['255.255.255.255', true, false],
  ['64:ff9b::7f00:1', true, false], // NAT64 of 127.0.0.1
  ['2002:7f00:1::', true, false], // 6to4 of 127.0.0.1
  ['10.1.2.3', false, false],
  ['172.16.0.5', false, false],
  ['192.168.1.10', false, false],
  ['100.64.0.1', false, false],
  ['fd12:3456::1', false, false],
  ['fd00:ec2::253', false, false],
  ['8.8.8.8', false, false],
  ['2606:4700::1111', false, false],
];

describe('host policy: address classes with deployment mode on and off', () => {
  for (const [address, deployed, local] of table) {
    it(`${address}: ${deployed ? 'refused' : 'allowed'} deployed, ${local ? 'refused' : 'allowed'} locally`, () => {
      expect(addressRefusal(address, 'deployed') !== undefined).toBe(deployed);
      expect(addressRefusal(address, 'local') !== undefined).toBe(local);
    });
  }

  it('operator CIDRs: allow lets a refused class through when deployed; deny wins in both modes', () => {
    setEnv({ LOUPE_DB_ALLOW_CIDRS: '127.0.0.0/8, ::1/128', LOUPE_DB_DENY_CIDRS: '10.9.0.0/16,127.0.0.5' });
    expect(addressRefusal('127.0.0.1', 'deployed')).toBeUndefined();
    expect(addressRefusal('::ffff:127.0.0.1', 'deployed')).toBeUndefined();
    expect(addressRefusal('::1', 'deployed')).toBeUndefined();
    expect(addressRefusal('127.0.0.5', 'deployed')).toBe('denied by the operator');
    expect(addressRefusal('127.0.0.5', 'local')).toBe('denied by the operator');
    expect(addressRefusal('10.9.8.7', 'local')).toBe('denied by the operator');
    expect(addressRefusal('::ffff:10.9.8.7', 'deployed')).toBe('denied by the operator');
    expect(addressRefusal('10.8.0.1', 'deployed')).toBeUndefined();
    expect(addressRefusal('169.254.169.254', 'deployed')).toBe('linkLocal');
  });

  it('a bad CIDR entry names the setting', () => {
    expect(() => parseCidrs('10.0.0.0/8,not-a-cidr', 'LOUPE_DB_DENY_CIDRS')).toThrow(
      /LOUPE_DB_DENY_CIDRS.*not-a-cidr/,
    );
  });

  const hostForms = [
    '127.0.0.1',
    '2130706433',
    '0x7f.1',
    '127.1',
    '0177.0.0.1',
    '::ffff:127.0.0.1',
    '[::1]',
    'localhost',
  ];
  for (const host of hostForms) {
    it(`host "${host}" is refused when deployed and allowed locally`, async () => {
      setEnv({ LOUPE_DB_HOST_POLICY: 'deployed' });
      await expect(assertHostAllowed(host)).rejects.toBeInstanceOf(HostRefusedError);
      setEnv({ LOUPE_DB_HOST_POLICY: 'local' });
      await expect(assertHostAllowed(host)).resolves.toBeUndefined();
    });
  }

  it('the connect-time check: a socket to a name resolving to loopback never opens a TCP connection', async () => {
    let accepted = 0;
    const server = createServer((s) => {
      accepted++;
      s.destroy();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const port = (server.address() as { port: number }).port;
    const attempt = (host: string) =>
      new Promise<string>((resolve) => {
        const s = checkedSocket();
        s.once('connect', () => {
          s.destroy();
          resolve('connected');
        });
        s.once('error', (e) => resolve((e as { code?: string }).code ?? 'error'));
        s.connect(port, host);
      });
    try {
      setEnv({ LOUPE_DB_HOST_POLICY: 'deployed' });
      expect(await attempt('localhost')).toBe('LOUPE_HOST_REFUSED');
      expect(await attempt('127.0.0.1')).toBe('LOUPE_HOST_REFUSED');
      expect(accepted).toBe(0);
      setEnv({ LOUPE_DB_HOST_POLICY: 'local' });
      expect(await attempt('127.0.0.1')).toBe('connected');
      expect(await attempt('localhost')).toBe('connected');
    } finally {
      server.close();
    }
  });
});

describe('Unix socket paths (pg connects to a path when the host starts with "/")', () => {
  const attempt = () =>
    new Promise<string>((resolve) => {
      const s = checkedSocket();
      s.once('connect', () => {
        s.destroy();
        resolve('connected');
      });
      s.once('error', (e) => resolve((e as { code?: string }).code ?? 'error'));
      (s.connect as unknown as (path: string) => void)('/tmp/loupe-no-such-socket/.s.PGSQL.5432');
    });
  it('are refused when deployed and tried locally', async () => {
    setEnv({ LOUPE_DB_HOST_POLICY: 'deployed' });
    expect(await attempt()).toBe('LOUPE_HOST_REFUSED');
    setEnv({ LOUPE_DB_HOST_POLICY: 'local' });
    expect(await attempt()).toBe('ENOENT');
  });
});

describe('configuration', () => {
  it('a bad CIDR setting stops configuration with a message naming the variable', async () => {
    const { config } = await import('../../shared/platform/config');
    setEnv({ LOUPE_DB_ALLOW_CIDRS: '10.0.0.0/8,300.1.1.1/8' });
    expect(() => config()).toThrow(/LOUPE_DB_ALLOW_CIDRS/);
    setEnv({ LOUPE_DB_ALLOW_CIDRS: '10.0.0.0/8, fd00::/8 ,192.0.2.7', LOUPE_DB_HOST_POLICY: 'sometimes' });
    expect(() => config()).toThrow(/LOUPE_DB_HOST_POLICY/);
    setEnv({ LOUPE_DB_HOST_POLICY: undefined });
    expect(config().LOUPE_DB_ALLOW_CIDRS).toContain('fd00::/8');
  });
});
