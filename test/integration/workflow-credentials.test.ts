import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalApp, startLocal } from '../../infra/local/app';
import { createOrganization } from '../../shared/auth/bootstrap';
import { generateKey } from '../../shared/auth/key-material';
import { applyCredential, CredentialHostRefused } from '../../shared/credentials/apply';
import { getCredentialMeta } from '../../shared/credentials/store';
import { OutboundRefused, sendOutbound } from '../../shared/outbound';
import { db } from '../../shared/platform/db/store';
import { type HttpsReceiver, startHttpsReceiver } from '../support/https-receiver';
import { captureOutput } from '../support/output';

/**
 * Workflow credentials over real HTTP against the local runtime, and applied to real requests sent
 * through the outbound module to local HTTPS receivers. Every secret used here is unique and is looked
 * for in every response, every log line (app log and the Powertools logger at DEBUG) and every stored item.
 */
describe('workflow credentials', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'loupe-wfcred-'));
  const key = generateKey();
  const appLines: string[] = [];
  const output = captureOutput();
  const texts: string[] = [];
  const secrets: string[] = [];
  let app: LocalApp;
  let receiver: HttpsReceiver;
  let other: HttpsReceiver;
  let n = 0;
  const secret = (label: string) => {
    const s = `${label}-S3cret-${Math.random().toString(36).slice(2, 12)}-${++n}`;
    secrets.push(s);
    return s;
  };

  const call = async (
    method: string,
    path: string,
    o: { body?: unknown; key?: string; raw?: string } = {},
  ) => {
    const body = o.raw ?? (o.body !== undefined ? JSON.stringify(o.body) : undefined);
    const res = await fetch(`${app.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${o.key ?? key}`,
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      body,
    });
    const text = await res.text();
    texts.push(text);
    return { status: res.status, body: JSON.parse(text), text };
  };

  beforeAll(async () => {
    receiver = await startHttpsReceiver((req, res) => {
      // Echoes what it got, Authorization included, the way a careless destination would.
      res.writeHead(401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer' });
      res.end(JSON.stringify({ error: 'denied', youSent: req.headers }));
    });
    other = await startHttpsReceiver();
    output.start();
    app = await startLocal({
      port: 0,
      dataDir,
      env: {
        LOUPE_ADMIN_KEY: key,
        LOUPE_LOG_LEVEL: 'DEBUG',
        POWERTOOLS_DEV: undefined,
        LOUPE_OUTBOUND_TEST_HOSTS: [receiver.testHostEntry, other.testHostEntry].join(','),
      },
      log: (l) => appLines.push(l),
    });
  });
  afterAll(async () => {
    output.stop();
    await app?.stop();
    await receiver?.close();
    await other?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const create = (body: Record<string, unknown>, k?: string) =>
    call('POST', '/workflow-credentials', { body, key: k });

  it('announces the test-only outbound setting at start', () => {
    expect(appLines.join('\n')).toMatch(/LOUPE_OUTBOUND_TEST_HOSTS is set \(TEST ONLY\)/);
  });

  it('creates each kind (201, metadata only), reads, lists and rotates them', async () => {
    const configs = {
      API_KEY_HEADER: { headerName: 'X-Api-Key', value: secret('apikey') },
      BEARER: { token: secret('bearer') },
      BASIC: { username: secret('user'), password: secret('pass') },
      CUSTOM_HEADERS: {
        headers: [
          { name: 'X-One', value: secret('one') },
          { name: 'X-Two', value: secret('two') },
        ],
      },
    };
    const ids: string[] = [];
    for (const [kind, config] of Object.entries(configs)) {
      const r = await create({ name: `cred ${kind}`, kind, allowedHosts: [receiver.hostname], config });
      expect(r.status, r.text).toBe(201);
      expect(r.body.data).toEqual({
        id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        name: `cred ${kind}`,
        kind,
        allowedHosts: [receiver.hostname],
        sharedWithMembers: false,
        hasSecret: true,
        lastTestedAt: null,
        lastTestStatus: null,
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
      });
      ids.push(r.body.data.id);
      const got = await call('GET', `/workflow-credentials/${r.body.data.id}`);
      expect(got.status).toBe(200);
      expect(got.body.data).toEqual(r.body.data);
    }
    const list = await call('GET', '/workflow-credentials');
    expect(list.status).toBe(200);
    expect(list.body.data.map((c: { name: string }) => c.name)).toEqual([
      'cred API_KEY_HEADER',
      'cred BASIC',
      'cred BEARER',
      'cred CUSTOM_HEADERS',
    ]);
    expect(list.body.meta.pagination).toMatchObject({ total: 4, page: 1 });

    // Rotation replaces the secret: the request now carries the new token, never the old one.
    const bearerId = ids[1];
    const before = await applyCredential(app.orgId, bearerId, `${receiver.url}/x`, {});
    expect(before.headers.authorization).toBe(`Bearer ${configs.BEARER.token}`);
    const newToken = secret('rotated');
    const rot = await call('PATCH', `/workflow-credentials/${bearerId}`, {
      body: { config: { token: newToken } },
    });
    expect(rot.status, rot.text).toBe(200);
    expect(rot.body.data).toMatchObject({ id: bearerId, kind: 'BEARER', hasSecret: true });
    expect(Date.parse(rot.body.data.updatedAt)).toBeGreaterThanOrEqual(Date.parse(rot.body.data.createdAt));
    const after = await applyCredential(app.orgId, bearerId, `${receiver.url}/x`, {});
    expect(after.headers.authorization).toBe(`Bearer ${newToken}`);

    // Rotation may change kind, name and hosts too; the config must fit the kind.
    const wrongShape = await call('PATCH', `/workflow-credentials/${bearerId}`, {
      body: { kind: 'BASIC', config: { token: secret('x') } },
    });
    expect(wrongShape.status).toBe(400);
    expect(wrongShape.body.error.details.issues.map((i: { path: string }) => i.path)).toEqual(
      expect.arrayContaining(['body.config.username', 'body.config.password']),
    );
    const changed = await call('PATCH', `/workflow-credentials/${bearerId}`, {
      body: {
        kind: 'API_KEY_HEADER',
        name: 'renamed',
        allowedHosts: [other.hostname],
        config: { headerName: 'X-Key', value: secret('k2') },
      },
    });
    expect(changed.status, changed.text).toBe(200);
    expect(changed.body.data).toMatchObject({
      name: 'renamed',
      kind: 'API_KEY_HEADER',
      allowedHosts: [other.hostname],
    });
    expect(await getCredentialMeta(app.orgId, bearerId)).toEqual({
      id: bearerId,
      name: 'renamed',
      allowedHosts: [other.hostname],
    });
    // the old name is free again
    expect(
      (
        await create({
          name: 'cred BEARER',
          kind: 'BEARER',
          allowedHosts: ['a.example.com'],
          config: { token: secret('t') },
        })
      ).status,
    ).toBe(201);
    expect(await getCredentialMeta(app.orgId, '00000000-0000-4000-8000-000000000000')).toBeUndefined();
  });

  it('answers 409 ALREADY_EXISTS on a duplicate name (ignoring case and spaces)', async () => {
    const body = {
      name: 'Dup Name',
      kind: 'BEARER',
      allowedHosts: ['hooks.example.com'],
      config: { token: secret('d') },
    };
    expect((await create(body)).status).toBe(201);
    const dup = await create({ ...body, name: '  dup name ', config: { token: secret('d2') } });
    expect(dup.status).toBe(409);
    expect(dup.body.error.code).toBe('ALREADY_EXISTS');
    const second = await create({ ...body, name: 'Other Name', config: { token: secret('d3') } });
    const rename = await call('PATCH', `/workflow-credentials/${second.body.data.id}`, {
      body: { name: 'DUP NAME', config: { token: secret('d4') } },
    });
    expect(rename.status).toBe(409);
    expect(rename.body.error.code).toBe('ALREADY_EXISTS');
  });

  it('rejects bad input with 400 naming the field, never echoing a value', async () => {
    const injected = secret('inj');
    const base = {
      name: 'bad',
      kind: 'BEARER',
      allowedHosts: ['ok.example.com'],
      config: { token: secret('b') },
    };
    const cases: [string, Record<string, unknown>, string][] = [
      ['unknown kind', { ...base, kind: 'OAUTH' }, 'body.kind'],
      ['no hosts', { ...base, allowedHosts: [] }, 'body.allowedHosts'],
      [
        '21 hosts',
        { ...base, allowedHosts: Array.from({ length: 21 }, (_, i) => `h${i}.example.com`) },
        'body.allowedHosts',
      ],
      ['scheme', { ...base, allowedHosts: ['https://ok.example.com'] }, 'body.allowedHosts.0'],
      ['port', { ...base, allowedHosts: ['ok.example.com:443'] }, 'body.allowedHosts.0'],
      ['path', { ...base, allowedHosts: ['ok.example.com/hook'] }, 'body.allowedHosts.0'],
      ['wildcard', { ...base, allowedHosts: ['*.example.com'] }, 'body.allowedHosts.0'],
      ['IPv4', { ...base, allowedHosts: ['93.184.216.34'] }, 'body.allowedHosts.0'],
      ['IPv6', { ...base, allowedHosts: ['[2606:4700::1111]'] }, 'body.allowedHosts.0'],
      ['upper case', { ...base, allowedHosts: ['OK.example.com'] }, 'body.allowedHosts.0'],
      ['trailing dot', { ...base, allowedHosts: ['ok.example.com.'] }, 'body.allowedHosts.0'],
      ['localhost', { ...base, allowedHosts: ['localhost'] }, 'body.allowedHosts.0'],
      ['unicode', { ...base, allowedHosts: ['bücher.example'] }, 'body.allowedHosts.0'],
      [
        'duplicate host',
        { ...base, allowedHosts: ['ok.example.com', 'ok.example.com'] },
        'body.allowedHosts.1',
      ],
      ['long name', { ...base, name: 'x'.repeat(121) }, 'body.name'],
      ['missing config', { ...base, config: undefined }, 'body.config'],
      ['bearer with CRLF', { ...base, config: { token: `${injected}\r\nX-Evil: 1` } }, 'body.config.token'],
      ['bearer with space', { ...base, config: { token: `a ${injected}` } }, 'body.config.token'],
      ['bearer with TAB', { ...base, config: { token: `a\t${injected}` } }, 'body.config.token'],
      [
        'header value with C1 NEL (U+0085)',
        { ...base, kind: 'API_KEY_HEADER', config: { headerName: 'X-Key', value: `a\u0085${injected}` } },
        'body.config.value',
      ],
      [
        'header name not a token',
        { ...base, kind: 'API_KEY_HEADER', config: { headerName: 'X Key', value: injected } },
        'body.config.headerName',
      ],
      [
        'header name with colon',
        { ...base, kind: 'API_KEY_HEADER', config: { headerName: 'X-Key:', value: injected } },
        'body.config.headerName',
      ],
      [
        'reserved header',
        { ...base, kind: 'API_KEY_HEADER', config: { headerName: 'Host', value: injected } },
        'body.config.headerName',
      ],
      [
        'value with LF',
        { ...base, kind: 'API_KEY_HEADER', config: { headerName: 'X-Key', value: `${injected}\nX-Evil: 1` } },
        'body.config.value',
      ],
      [
        'value with NUL',
        { ...base, kind: 'API_KEY_HEADER', config: { headerName: 'X-Key', value: `${injected}\u0000` } },
        'body.config.value',
      ],
      [
        'value too long',
        { ...base, kind: 'API_KEY_HEADER', config: { headerName: 'X-Key', value: 'v'.repeat(4097) } },
        'body.config.value',
      ],
      [
        'basic user with colon',
        { ...base, kind: 'BASIC', config: { username: 'a:b', password: injected } },
        'body.config.username',
      ],
      [
        'basic password with CR',
        { ...base, kind: 'BASIC', config: { username: 'a', password: `${injected}\r` } },
        'body.config.password',
      ],
      [
        'custom: no headers',
        { ...base, kind: 'CUSTOM_HEADERS', config: { headers: [] } },
        'body.config.headers',
      ],
      [
        'custom: 21 headers',
        {
          ...base,
          kind: 'CUSTOM_HEADERS',
          config: { headers: Array.from({ length: 21 }, (_, i) => ({ name: `X-H${i}`, value: 'v' })) },
        },
        'body.config.headers',
      ],
      [
        'custom: twice',
        {
          ...base,
          kind: 'CUSTOM_HEADERS',
          config: {
            headers: [
              { name: 'X-A', value: 'v' },
              { name: 'x-a', value: injected },
            ],
          },
        },
        'body.config.headers.1.name',
      ],
      [
        'custom: CRLF',
        { ...base, kind: 'CUSTOM_HEADERS', config: { headers: [{ name: 'X-A', value: `${injected}\r\n` }] } },
        'body.config.headers.0.value',
      ],
      [
        'config of another kind',
        { ...base, kind: 'BEARER', config: { username: 'u', password: injected } },
        'body.config.token',
      ],
      ['unknown config field', { ...base, config: { token: 'abc', tokn: injected } }, 'body.config'],
      ['config not an object', { ...base, config: injected }, 'body.config'],
      ['hosts not an array', { ...base, allowedHosts: 'ok.example.com' }, 'body.allowedHosts'],
    ];
    for (const [label, body, path] of cases) {
      const r = await create(body);
      expect(r.status, label).toBe(400);
      expect(r.body.error.code, label).toBe('VALIDATION_ERROR');
      expect(
        r.body.error.details.issues.map((i: { path: string }) => i.path),
        label,
      ).toContain(path);
      expect(r.text, label).not.toContain(injected);
    }
    expect((await call('POST', '/workflow-credentials', { raw: '{"name":' })).status).toBe(400);
    const list = await call('GET', '/workflow-credentials');
    expect(list.body.data.map((c: { name: string }) => c.name)).not.toContain('bad');
    const one = list.body.data[0].id;
    const patchBad = await call('PATCH', `/workflow-credentials/${one}`, { body: { name: 'x' } });
    expect(patchBad.status).toBe(400);
    expect(patchBad.body.error.details.issues[0].path).toBe('body.config');
  });

  it('lets exactly one of concurrent creates with one name win, and serializes concurrent rotations', async () => {
    const tokens = Array.from({ length: 6 }, () => secret('race'));
    const creates = await Promise.all(
      tokens.map((token) =>
        create({ name: 'Race', kind: 'BEARER', allowedHosts: [receiver.hostname], config: { token } }),
      ),
    );
    expect(creates.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409, 409]);
    const id = creates.find((r) => r.status === 201)!.body.data.id;
    const listed = (await call('GET', '/workflow-credentials?pageSize=100')).body.data.filter(
      (c: { name: string }) => c.name === 'Race',
    );
    expect(listed).toHaveLength(1);

    const rotations = Array.from({ length: 5 }, () => secret('rot'));
    const results = await Promise.all(
      rotations.map((token) => call('PATCH', `/workflow-credentials/${id}`, { body: { config: { token } } })),
    );
    const statuses = results.map((r) => r.status);
    expect(statuses.every((st) => st === 200 || st === 409)).toBe(true);
    expect(statuses).toContain(200);
    for (const r of results.filter((x) => x.status === 409)) expect(r.body.error.code).toBe('CONFLICT');
    // What is stored is one of the rotations that answered 200.
    const winners = rotations.filter((_, i) => statuses[i] === 200);
    const applied = await applyCredential(app.orgId, id, receiver.url, {});
    expect(winners.map((t) => `Bearer ${t}`)).toContain(applied.headers.authorization);
  });

  it('requires the workflow_credentials scope and an admin; other organizations get 404', async () => {
    const c = await create({
      name: 'guarded',
      kind: 'BEARER',
      allowedHosts: ['g.example.com'],
      config: { token: secret('g') },
    });
    const id = c.body.data.id;
    const mem = await call('POST', '/members', { body: { email: `wfcred-${n}@example.com`, name: 'M' } });
    expect(mem.status, mem.text).toBe(201);
    const memberKey = (
      await call('POST', `/members/${mem.body.data.id}/keys`, {
        body: { name: 'm', scopes: ['workflow_credentials'] },
      })
    ).body.data.key as string;
    const adminNoScope = (await call('POST', '/keys', { body: { name: 'w', scopes: ['workflows'] } })).body
      .data.key as string;
    for (const k of [memberKey, adminNoScope]) {
      expect((await call('GET', '/workflow-credentials', { key: k })).status).toBe(403);
      expect(
        (
          await create(
            { name: 'm', kind: 'BEARER', allowedHosts: ['g.example.com'], config: { token: 'x' } },
            k,
          )
        ).status,
      ).toBe(403);
      expect((await call('GET', `/workflow-credentials/${id}`, { key: k })).status).toBe(403);
      expect(
        (await call('PATCH', `/workflow-credentials/${id}`, { key: k, body: { config: { token: 'y' } } }))
          .status,
      ).toBe(403);
      expect((await call('DELETE', `/workflow-credentials/${id}`, { key: k })).status).toBe(403);
    }
    const otherOrg = await createOrganization({
      name: 'Other creds',
      adminEmail: `wfcred-${n}@other.example`,
    });
    const k = otherOrg.key;
    expect((await call('GET', `/workflow-credentials/${id}`, { key: k })).status).toBe(404);
    expect(
      (await call('PATCH', `/workflow-credentials/${id}`, { key: k, body: { config: { token: 'y' } } }))
        .status,
    ).toBe(404);
    expect((await call('DELETE', `/workflow-credentials/${id}`, { key: k })).status).toBe(404);
    expect((await call('GET', '/workflow-credentials', { key: k })).body.data).toEqual([]);
    await expect(applyCredential(otherOrg.orgId, id, 'https://g.example.com/', {})).rejects.toMatchObject({
      status: 404,
    });
    // the name is per organization
    expect(
      (
        await create(
          {
            name: 'guarded',
            kind: 'BEARER',
            allowedHosts: ['g.example.com'],
            config: { token: secret('o') },
          },
          k,
        )
      ).status,
    ).toBe(201);
    // and still there for its owner
    expect((await call('GET', `/workflow-credentials/${id}`)).status).toBe(200);
  });

  it('deletes (200 {deleted: true}), frees the name, and a second delete is 404', async () => {
    const c = await create({
      name: 'to delete',
      kind: 'BEARER',
      allowedHosts: ['d.example.com'],
      config: { token: secret('del') },
    });
    const id = c.body.data.id;
    const del = await call('DELETE', `/workflow-credentials/${id}`);
    expect(del.status).toBe(200);
    expect(del.body.data).toEqual({ deleted: true });
    expect((await call('GET', `/workflow-credentials/${id}`)).status).toBe(404);
    expect((await call('DELETE', `/workflow-credentials/${id}`)).status).toBe(404);
    expect(await db.get(`ORG#${app.orgId}`, `WFCRED#${id}`)).toBeUndefined();
    expect(
      (
        await create({
          name: 'to delete',
          kind: 'BEARER',
          allowedHosts: ['d.example.com'],
          config: { token: secret('del2') },
        })
      ).status,
    ).toBe(201);
    await expect(applyCredential(app.orgId, id, 'https://d.example.com/', {})).rejects.toMatchObject({
      status: 404,
    });
  });

  it('applies a credential only to its allowed hosts, and the request reaches the receiver with the header', async () => {
    const token = secret('apply');
    const c = await create({
      name: 'apply',
      kind: 'BEARER',
      allowedHosts: [receiver.hostname],
      config: { token },
    });
    const id = c.body.data.id;
    const applied = await applyCredential(app.orgId, id, `${receiver.url}/hook?x=1`, {
      'content-type': 'application/json',
      Authorization: 'Bearer attacker-chosen',
    });
    expect(applied.headers).toEqual({ 'content-type': 'application/json', authorization: `Bearer ${token}` });
    const before = receiver.requests.length;
    const res = await sendOutbound({
      url: `${receiver.url}/hook?x=1`,
      method: 'POST',
      headers: applied.headers,
      body: '{"a":1}',
      timeoutMs: 10_000,
    });
    expect(receiver.requests.length).toBe(before + 1);
    const got = receiver.requests.at(-1)!;
    expect(got.headers.authorization).toBe(`Bearer ${token}`);
    expect(got.url).toBe('/hook?x=1');
    // The receiver echoes the header back: the raw body holds the token, the redacted one does not.
    expect(res.status).toBe(401);
    expect(res.body).toContain(token);
    const redacted = applied.redact(res.body);
    expect(redacted).not.toContain(token);
    expect(redacted).toContain('[REDACTED]');
    expect(JSON.parse(redacted).error).toBe('denied');
    expect(
      applied.redact(`failed: ${JSON.stringify({ t: token })} ${encodeURIComponent(token)}`),
    ).not.toContain(token);

    // The same credential on another host (even another test receiver) is refused before any connection.
    const otherBefore = other.connections;
    await expect(applyCredential(app.orgId, id, `${other.url}/hook`, {})).rejects.toBeInstanceOf(
      CredentialHostRefused,
    );
    await expect(
      applyCredential(app.orgId, id, `https://${receiver.hostname}.evil.example/`, {}),
    ).rejects.toBeInstanceOf(CredentialHostRefused);
    await expect(
      applyCredential(app.orgId, id, `https://evil.${receiver.hostname}/`, {}),
    ).rejects.toBeInstanceOf(CredentialHostRefused);
    // An allowed host over http, another port or with userinfo: refused by the outbound rule, no header.
    for (const url of [
      `http://${receiver.hostname}/`,
      `${receiver.url}:8443/`,
      `https://u:p@${receiver.hostname}/`,
    ])
      await expect(applyCredential(app.orgId, id, url, {})).rejects.toBeInstanceOf(OutboundRefused);
    expect(other.connections).toBe(otherBefore);
  });

  it('redacts BASIC credentials in every form, including the base64 user:pass', async () => {
    const username = secret('bu');
    const password = secret('bp');
    const c = await create({
      name: 'basic echo',
      kind: 'BASIC',
      allowedHosts: [receiver.hostname],
      config: { username, password },
    });
    const applied = await applyCredential(app.orgId, c.body.data.id, receiver.url, {});
    const b64 = Buffer.from(`${username}:${password}`).toString('base64');
    expect(applied.headers.authorization).toBe(`Basic ${b64}`);
    const res = await sendOutbound({
      url: receiver.url,
      method: 'GET',
      headers: applied.headers,
      timeoutMs: 10_000,
    });
    expect(res.body).toContain(b64);
    expect(receiver.requests.at(-1)!.headers.authorization).toBe(`Basic ${b64}`);
    const text = `${res.body} ${b64.replace(/=+$/, '')} ${Buffer.from(`${username}:${password}`).toString('base64url')} ${password} ${username}`;
    const redacted = applied.redact(text);
    for (const s of [b64, b64.replace(/=+$/, ''), password, username]) expect(redacted).not.toContain(s);
  });

  it('API_KEY_HEADER and CUSTOM_HEADERS reach the receiver with their exact headers', async () => {
    const v = secret('apiv');
    const a = await create({
      name: 'api key',
      kind: 'API_KEY_HEADER',
      allowedHosts: [receiver.hostname, other.hostname],
      config: { headerName: 'X-Api-Key', value: v },
    });
    const applied = await applyCredential(app.orgId, a.body.data.id, `${other.url}/in`, {
      'x-api-key': 'mine',
    });
    expect(applied.headers).toEqual({ 'X-Api-Key': v });
    await sendOutbound({
      url: `${other.url}/in`,
      method: 'PUT',
      headers: applied.headers,
      body: 'x',
      timeoutMs: 10_000,
    });
    expect(other.requests.at(-1)!.headers['x-api-key']).toBe(v);
    const h1 = secret('h1');
    const h2 = secret('h2');
    const cu = await create({
      name: 'custom',
      kind: 'CUSTOM_HEADERS',
      allowedHosts: [receiver.hostname],
      config: {
        headers: [
          { name: 'X-Tenant', value: h1 },
          { name: 'X-Signature', value: h2 },
        ],
      },
    });
    const ap = await applyCredential(app.orgId, cu.body.data.id, receiver.url, {});
    const res = await sendOutbound({
      url: receiver.url,
      method: 'DELETE',
      headers: ap.headers,
      timeoutMs: 10_000,
    });
    expect(receiver.requests.at(-1)!.headers).toMatchObject({ 'x-tenant': h1, 'x-signature': h2 });
    expect(ap.redact(res.body)).not.toMatch(new RegExp(`${h1}|${h2}`));
  });

  it('stores the config only as ciphertext bound to the organization and credential', async () => {
    const token = secret('stored');
    const c = await create({
      name: 'stored',
      kind: 'BEARER',
      allowedHosts: ['s.example.com'],
      config: { token },
    });
    const item = await db.get<Record<string, unknown>>(`ORG#${app.orgId}`, `WFCRED#${c.body.data.id}`);
    expect(item).toBeDefined();
    expect(typeof item!.configCipher).toBe('string');
    expect(JSON.stringify(item)).not.toContain(token);
    // A ciphertext moved onto another credential does not decrypt there.
    const d = await create({
      name: 'stored 2',
      kind: 'BEARER',
      allowedHosts: ['s.example.com'],
      config: { token: secret('s2') },
    });
    await db.patch(`ORG#${app.orgId}`, `WFCRED#${d.body.data.id}`, { configCipher: item!.configCipher });
    await expect(applyCredential(app.orgId, d.body.data.id, 'https://s.example.com/', {})).rejects.toThrow();
  });

  it('no response, log line or stored item carries a secret', async () => {
    expect(secrets.length).toBeGreaterThan(20);
    expect(texts.length).toBeGreaterThan(50);
    // The Powertools logger did write (DEBUG): the checks below are not vacuous.
    expect(output.lines.join('')).toContain('"service":"loupe"');
    const stored = JSON.stringify(await db.query({ pk: `ORG#${app.orgId}` }));
    expect(stored).toContain('WFCRED#');
    const logs = [...appLines, ...output.lines].join('\n');
    for (const s of secrets) {
      for (const t of texts) expect(t).not.toContain(s);
      expect(logs).not.toContain(s);
      expect(stored).not.toContain(s);
    }
  });
});
