import { lookup } from 'node:dns/promises';
import { hostname as machineHostname } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  checkDestination,
  checkUrl,
  classifyAddress,
  isPublicAddress,
  OutboundFailed,
  OutboundRefused,
  sendOutbound,
} from '../../shared/outbound';
import { resetConfig } from '../../shared/platform/config';
import { type HttpsReceiver, startHttpsReceiver } from '../support/https-receiver';

/**
 * The outbound module against real local HTTPS receivers (each on port 443 of its own 127.x.y.z, with a
 * certificate for *.receiver.test). Only the receivers' hostnames are mapped by the test-only setting;
 * every other way of naming their addresses must be refused without a TCP connection reaching them.
 */
let target: HttpsReceiver; // the address the hostile URLs point at
let redirector: HttpsReceiver;
let hidden: HttpsReceiver; // a "private" service a redirect points at
const saved = { ...process.env };

const setEnv = (env: Record<string, string | undefined>) => {
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  resetConfig();
};

beforeAll(async () => {
  target = await startHttpsReceiver();
  redirector = await startHttpsReceiver();
  hidden = await startHttpsReceiver();
  setEnv({
    LOUPE_RUNTIME: 'local',
    AWS_LAMBDA_FUNCTION_NAME: undefined,
    LOUPE_OUTBOUND_TEST_HOSTS: [
      target.testHostEntry,
      redirector.testHostEntry,
      `mismatch.example.org=${target.ip}`,
    ].join(','),
  });
});

afterAll(async () => {
  for (const k of ['LOUPE_RUNTIME', 'AWS_LAMBDA_FUNCTION_NAME', 'LOUPE_OUTBOUND_TEST_HOSTS'])
    setEnv({ [k]: saved[k] });
  await Promise.all([target?.close(), redirector?.close(), hidden?.close()]);
});

const send = (url: string, extra: Partial<Parameters<typeof sendOutbound>[0]> = {}) =>
  sendOutbound({ url, method: 'POST', body: '{"x":1}', timeoutMs: 5000, ...extra });

describe('the hostile-destination table', () => {
  /** Forms of the target receiver's own address, so a leak would show up as a connection on it. */
  function hostileCases(): [string, string][] {
    const [a, b, c, d] = target.ip.split('.').map(Number);
    const int = ((a << 24) | (b << 16) | (c << 8) | d) >>> 0;
    const hex = (x: number) => x.toString(16);
    const oct = (x: number) => `0${x.toString(8)}`;
    const h16 = `${hex((a << 8) | b)}:${hex((c << 8) | d)}`;
    const pct = [...target.ip].map((ch) => (ch === '.' ? '.' : `%${ch.charCodeAt(0).toString(16)}`)).join('');
    const host = target.hostname;
    return [
      ['dotted IPv4 literal of the receiver', `https://${target.ip}/`],
      ['explicit :443 on the literal', `https://${target.ip}:443/hook`],
      ['decimal IPv4', `https://${int}/`],
      ['octal IPv4', `https://${oct(a)}.${oct(b)}.${oct(c)}.${oct(d)}/`],
      ['hex IPv4 per octet', `https://0x${hex(a)}.0x${hex(b)}.0x${hex(c)}.0x${hex(d)}/`],
      ['hex IPv4 whole', `https://0x${hex(int)}/`],
      ['short form a.b.cd', `https://${a}.${b}.${c * 256 + d}/`],
      ['short form a.bcd', `https://${a}.${b * 65536 + c * 256 + d}/`],
      ['mixed octal and hex', `https://${oct(a)}.0x${hex(b)}.${c}.${d}/`],
      ['trailing dot after the literal', `https://${target.ip}./`],
      ['percent-encoded IPv4 host', `https://${pct}/`],
      [
        'full-width digits',
        `https://${[...target.ip].map((ch) => (ch === '.' ? '．' : String.fromCharCode(0xff10 + Number(ch)))).join('')}/`,
      ],
      ['IPv4-mapped IPv6', `https://[::ffff:${target.ip}]/`],
      ['IPv4-mapped IPv6, hex form', `https://[::ffff:${h16}]/`],
      ['IPv4-translated IPv6', `https://[::ffff:0:${target.ip}]/`],
      ['IPv4-compatible IPv6', `https://[::${target.ip}]/`],
      ['NAT64 64:ff9b::/96', `https://[64:ff9b::${target.ip}]/`],
      ['NAT64 local-use 64:ff9b:1::/48', `https://[64:ff9b:1::${target.ip}]/`],
      ['6to4 of loopback', `https://[2002:${h16}::1]/`],
      ['Teredo with a private client', 'https://[2001:0:4136:e378:8000:63bf:f5ff:fffe]/'],
      ['userinfo before a loopback literal', `https://public@${target.ip}/`],
      ['userinfo that looks like a host', `https://api.example.com@${host}/`],
      ['user and password before a mapped host', `https://user:pass@${host}/`],
      ['empty userinfo', `https://:@${host}/`],
      ['http scheme', `http://${host}/`],
      ['port 8443', `https://${host}:8443/`],
      ['port 80', `https://${host}:80/`],
      ['ftp scheme', `ftp://${host}/`],
      ['trailing-dot mapped hostname', `https://${host}./`],
      ['tab inside the host', `https://${host.slice(0, 3)}\t${host.slice(3)}/`],
      ['localhost', 'https://localhost/'],
      ['LOCALHOST', 'https://LOCALHOST/'],
      ['localhost.', 'https://localhost./'],
      ['*.localhost', `https://${host}.localhost/`],
      ['percent-encoded localhost', 'https://%6c%6f%63%61%6c%68%6f%73%74/'],
      ['IPv6 loopback', 'https://[::1]/'],
      ['IPv6 loopback, long form', 'https://[0:0:0:0:0:0:0:1]/'],
      ['IPv6 unspecified', 'https://[::]/'],
      ['IPv6 link-local', 'https://[fe80::1]/'],
      ['IPv6 link-local with a zone', 'https://[fe80::1%25eth0]/'],
      ['IPv6 unique local', 'https://[fc00::1]/'],
      ['IPv6 multicast', 'https://[ff02::1]/'],
      ['IPv6 documentation', 'https://[2001:db8::1]/'],
      ['IPv4 unspecified', 'https://0.0.0.0/'],
      ['IPv4 zero short form', 'https://0/'],
      ['AWS metadata', 'https://169.254.169.254/latest/meta-data/'],
      ['AWS metadata, decimal', 'https://2852039166/'],
      ['AWS metadata, IPv4-mapped', 'https://[::ffff:169.254.169.254]/'],
      ['AWS metadata IPv6', 'https://[fd00:ec2::254]/'],
      ['Alibaba metadata (CGNAT)', 'https://100.100.100.200/'],
      ['CGNAT', 'https://100.64.0.1/'],
      ['multicast', 'https://224.0.0.1/'],
      ['broadcast', 'https://255.255.255.255/'],
      ['private 10/8', 'https://10.0.0.1/'],
      ['private 172.16/12', 'https://172.16.5.4/'],
      ['private 192.168/16', 'https://192.168.1.1/'],
      ['documentation 192.0.2/24', 'https://192.0.2.1/'],
      ['benchmarking 198.18/15', 'https://198.18.0.1/'],
      ['reserved 240/4', 'https://240.0.0.1/'],
      ['NAT64 of metadata', 'https://[64:ff9b::169.254.169.254]/'],
      ['not a URL', 'not a url'],
    ];
  }

  it('refuses every case before any connection, with a reason', async () => {
    const cases = hostileCases();
    expect(cases.length).toBeGreaterThanOrEqual(40);
    const before = { connections: target.connections, requests: target.requests.length };
    for (const [label, url] of cases) {
      let err: unknown;
      try {
        await send(url);
      } catch (e) {
        err = e;
      }
      expect(err, label).toBeInstanceOf(OutboundRefused);
      expect((err as OutboundRefused).reason, label).toMatch(/\w/);
      await expect(checkDestination(url), label).rejects.toBeInstanceOf(OutboundRefused);
      expect(() => checkUrl(url), label).toThrow(OutboundRefused);
    }
    expect(target.connections).toBe(before.connections);
    expect(target.requests.length).toBe(before.requests);
    // Positive control: the receiver's mapped hostname does reach it, so the counter above can move.
    const ok = await send(`${target.url}/control`);
    expect(ok.status).toBe(200);
    expect(target.connections).toBe(before.connections + 1);
    expect(target.requests.at(-1)!.url).toBe('/control');
  });

  it('refuses a hostname that the system resolver maps to loopback (through /etc/hosts), at resolution', async () => {
    const name = machineHostname().toLowerCase();
    const resolved = await lookup(name, { all: true });
    // The precondition this case relies on: the machine's own name resolves, and not to a public address.
    expect(resolved.length).toBeGreaterThan(0);
    expect(resolved.some((r) => !isPublicAddress(r.address))).toBe(true);
    expect(() => checkUrl(`https://${name}/`)).not.toThrow(); // it passes the URL rule...
    const err = await send(`https://${name}/`).catch((e) => e);
    expect(err).toBeInstanceOf(OutboundRefused); // ...and is refused once resolved
    expect(err.code).toBe('ADDRESS');
    expect(err.reason).toMatch(/not public/);
  });

  it('refuses a name that does not resolve (DNS)', async () => {
    const err = await send('https://no-such-host.invalid/').catch((e) => e);
    expect(err).toBeInstanceOf(OutboundRefused);
    expect(err.code).toBe('DNS');
  });

  it('returns a redirect to a private address as the response and never follows it', async () => {
    for (const location of [
      `https://${hidden.ip}/`,
      `https://${hidden.hostname}/`,
      'https://169.254.169.254/',
    ]) {
      redirector.setHandler((_req, res) => {
        res.writeHead(302, { location });
        res.end();
      });
      const res = await send(`${redirector.url}/start`);
      expect(res.status).toBe(302);
      expect(res.headers.location).toBe(location);
    }
    // Also a redirect to the same receiver: still exactly one request per call.
    const before = redirector.requests.length;
    redirector.setHandler((req, res) => {
      res.writeHead(301, { location: `${redirector.url}/next` });
      res.end(req.url);
    });
    const res = await send(`${redirector.url}/first`);
    expect(res.status).toBe(301);
    expect(res.body).toBe('/first');
    expect(redirector.requests.length).toBe(before + 1);
    expect(hidden.connections).toBe(0);
  });
});

describe('sendOutbound', () => {
  it('sends the method, path, query, headers and body, and returns status, lower-case headers and body', async () => {
    target.setHandler((req, res) => {
      res.writeHead(201, { 'X-Reply': 'yes', 'Content-Type': 'text/plain' });
      res.end(`${req.method} ${req.url} ${req.headers['x-custom']} ${req.body}`);
    });
    const res = await sendOutbound({
      url: `${target.url}:443/p/a?b=1&c=2#frag`,
      method: 'PATCH',
      headers: { 'X-Custom': 'v1', 'Content-Type': 'application/json' },
      body: new TextEncoder().encode('{"k":"v"}'),
      timeoutMs: 5000,
    });
    expect(res).toMatchObject({ status: 201, body: 'PATCH /p/a?b=1&c=2 v1 {"k":"v"}', truncated: false });
    expect(res.headers['x-reply']).toBe('yes');
    expect(res.durationMs).toBeGreaterThanOrEqual(0);
    const got = target.requests.at(-1)!;
    expect(got.headers.host).toBe(target.hostname);
    // The system resolver does not know the receiver's name: the socket went to the pinned address.
    await expect(lookup(target.hostname)).rejects.toThrow();
    expect(got.headers['content-length']).toBe('9');
  });

  it('enforces the total timeout, including a body that trickles in', async () => {
    target.setHandler(() => {}); // never answers
    const t0 = Date.now();
    const err = await sendOutbound({ url: target.url, method: 'GET', timeoutMs: 400 }).catch((e) => e);
    expect(err).toBeInstanceOf(OutboundFailed);
    expect(err.kind).toBe('TIMEOUT');
    expect(Date.now() - t0).toBeGreaterThanOrEqual(350); // never early (load can only make it later)

    // A body that keeps coming never ends an idle timer: only a total timeout ends this call (without
    // one it would run until the test's own timeout).
    target.setHandler((_req, res) => {
      res.writeHead(200);
      const timer = setInterval(() => res.write('x'), 50);
      res.on('close', () => clearInterval(timer));
    });
    const slow = await sendOutbound({ url: target.url, method: 'GET', timeoutMs: 600 }).catch((e) => e);
    expect(slow).toBeInstanceOf(OutboundFailed);
    expect(slow.kind).toBe('TIMEOUT');
  });

  it('reads the response body only up to the bound (default 64 KiB)', async () => {
    const big = 'a'.repeat(1024 * 1024);
    target.setHandler((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(big);
    });
    const small = await sendOutbound({
      url: target.url,
      method: 'GET',
      timeoutMs: 5000,
      maxResponseBytes: 1000,
    });
    expect(small.truncated).toBe(true);
    expect(small.body).toBe('a'.repeat(1000));
    const dflt = await sendOutbound({ url: target.url, method: 'GET', timeoutMs: 5000 });
    expect(dflt.truncated).toBe(true);
    expect(dflt.body.length).toBe(64 * 1024);
    target.setHandler((_req, res) => {
      res.end('exact');
    });
    const exact = await sendOutbound({
      url: target.url,
      method: 'GET',
      timeoutMs: 5000,
      maxResponseBytes: 5,
    });
    expect(exact).toMatchObject({ body: 'exact', truncated: false });
  });

  it('verifies TLS against the hostname: a certificate for another name is refused before any request', async () => {
    const before = target.requests.length;
    const err = await sendOutbound({
      url: 'https://mismatch.example.org/',
      method: 'GET',
      timeoutMs: 5000,
    }).catch((e) => e);
    expect(err).toBeInstanceOf(OutboundFailed);
    expect(err.kind).toBe('TLS');
    expect(target.requests.length).toBe(before);
  });

  it('refuses header injection and framing headers before connecting', async () => {
    const before = target.connections;
    const injections: Record<string, string>[] = [
      { 'X-A': 'v\r\nX-Injected: 1' },
      { 'X-A': 'v\n' },
      { 'X-A': 'v\u0000' },
      { 'Bad Name': 'v' },
      { Host: 'other.example.com' },
      { 'Content-Length': '5' },
      { 'Transfer-Encoding': 'chunked' },
    ];
    for (const headers of injections)
      await expect(send(target.url, { headers }), JSON.stringify(headers)).rejects.toBeInstanceOf(
        OutboundRefused,
      );
    expect(target.connections).toBe(before);
  });

  it('ignores LOUPE_OUTBOUND_TEST_HOSTS in Lambda', async () => {
    const before = target.connections;
    setEnv({ AWS_LAMBDA_FUNCTION_NAME: 'loupe-test' });
    try {
      const err = await send(target.url).catch((e) => e);
      expect(err).toBeInstanceOf(OutboundRefused);
      expect(err.code).toBe('DNS');
    } finally {
      setEnv({ AWS_LAMBDA_FUNCTION_NAME: undefined });
    }
    expect(target.connections).toBe(before);
    target.setHandler((_req, res) => {
      res.end('ok');
    });
    expect((await send(target.url)).status).toBe(200);
  });

  it('accepts only loopback addresses in LOUPE_OUTBOUND_TEST_HOSTS', async () => {
    const good = process.env.LOUPE_OUTBOUND_TEST_HOSTS;
    try {
      for (const bad of [
        'evil.example.com=169.254.169.254',
        'evil.example.com=10.0.0.1',
        'noequals',
        '=127.0.0.1',
      ]) {
        setEnv({ LOUPE_OUTBOUND_TEST_HOSTS: bad });
        await expect(checkDestination('https://evil.example.com/'), bad).rejects.toThrow(
          /LOUPE_OUTBOUND_TEST_HOSTS/,
        );
      }
    } finally {
      setEnv({ LOUPE_OUTBOUND_TEST_HOSTS: good });
    }
  });
});

describe('validation-time rule and address classes', () => {
  it('accepts public https destinations on 443', () => {
    expect(checkUrl('https://example.com/x?y=1').hostname).toBe('example.com');
    expect(checkUrl('https://Hooks.Example.COM:443/x').hostname).toBe('hooks.example.com');
    expect(checkUrl('https://8.8.8.8/').hostname).toBe('8.8.8.8');
    expect(checkUrl('https://[2606:4700:4700::1111]/').hostname).toBe('[2606:4700:4700::1111]');
    expect(checkUrl('https://xn--bcher-kva.example/').hostname).toBe('xn--bcher-kva.example');
  });

  it('classifies addresses with ipaddr.js ranges, looking inside IPv6 forms that carry IPv4', () => {
    for (const ip of [
      '8.8.8.8',
      '1.1.1.1',
      '2606:4700::1111',
      '2a00:1450:4001::200e',
      '::ffff:8.8.8.8',
      '64:ff9b::808:808',
    ])
      expect(classifyAddress(ip).public, ip).toBe(true);
    for (const ip of [
      '127.0.0.1',
      '10.1.2.3',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '255.255.255.255',
      '224.0.0.251',
      '192.0.2.5',
      '198.51.100.1',
      '203.0.113.9',
      '198.19.1.1',
      '240.1.1.1',
      '::1',
      '::',
      'fe80::1',
      'fd00:ec2::254',
      'ff05::2',
      '2001:db8::1',
      '2001:2::1',
      '::ffff:10.0.0.1',
      '::ffff:0:127.0.0.1',
      '::7f00:1',
      '64:ff9b::a9fe:a9fe',
      '64:ff9b:1::c0a8:1',
      '2002:c0a8:101::1',
      '2001:0:4136:e378:8000:63bf:3fff:fdd2',
      '4000::1',
      'not-an-ip',
    ])
      expect(classifyAddress(ip).public, ip).toBe(false);
  });
});
