import { afterAll, beforeAll, beforeEach, describe, expect, inject, it, vi } from 'vitest';
import { createOrganization } from '../../shared/auth/bootstrap';
import { loadEmbeddingIndex, resetEmbeddingCooldowns } from '../../shared/connections/embedding-index';
import { connPk } from '../../shared/connections/store';
import { resetConfig } from '../../shared/platform/config';
import { db } from '../../shared/platform/db/store';
import { queue } from '../../shared/platform/queue';
import { addBalance } from '../../shared/usage/balance';
import {
  createConnection,
  createPostgresDatabase,
  postgresAdmin,
  postgresConnection,
} from '../support/connections';
import {
  completions,
  type EmbeddingsMode,
  embeddingRequests,
  type FakeOpenAI,
  type RecordedRequest,
  startFakeOpenAI,
} from '../support/fake-openai';
import { startTestServer, type TestServer } from '../support/server';
import { sleep, waitFor } from '../support/wait';

const DB = 'chat_embeddings';
const FILLER = 100;
const WORDS = ['audit', 'cache', 'session', 'metric', 'job', 'queue', 'token', 'setting', 'flag', 'webhook'];
const MODEL = 'test-embedding-model';
const DIMENSIONS = 64;
const TABLES = FILLER + 1;
/**
 * Misspelled (an `r` missing): Porter stems `reimbusements` to `reimbus`, the table's name to `reimburs`,
 * so neither the terms nor a prefix meet; the trigram vectors share most of their trigrams.
 */
const QUESTION = 'How many reimbusements per audit session?';
const TARGET = 'fin.reimbursements';

const systemText = (req: RecordedRequest) => req.body.messages[0].content as string;
const described = (system: string, table: string) =>
  system
    .split('\n')
    .some(
      (l) => l === `TABLE ${table}` || l.startsWith(`TABLE ${table} `) || l.startsWith(`TABLE ${table}:`),
    );

const embeddingsOn = (on: boolean) => {
  if (on) {
    process.env.LOUPE_EMBEDDING_MODEL = MODEL;
    process.env.LOUPE_EMBEDDING_DIMENSIONS = String(DIMENSIONS);
  } else {
    delete process.env.LOUPE_EMBEDDING_MODEL;
    delete process.env.LOUPE_EMBEDDING_DIMENSIONS;
  }
  resetConfig();
};

/**
 * The optional embedding index on real PostgreSQL, against the test model server's /v1/embeddings
 * (deterministic trigram vectors): built at introspection and charged as usage, rebuilt only for
 * changed tables, fused with lexical ranking so that a misspelled question reaches its table, and
 * never in the way: every kind of endpoint failure leaves chat answering with lexical ranking.
 */
describe('chat with the schema embedding index', () => {
  const info = inject('postgres');
  let s: TestServer;
  let fake: FakeOpenAI;
  let connectionId: string;

  const ask = async (message: string) => {
    fake.script({ content: 'Noted.' });
    const r = await s.call('POST', '/chat', { body: { message, connectionId } });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.content).toBe('Noted.');
    return systemText(completions(fake).at(-1)!);
  };
  const usage = async () =>
    (await s.call('GET', '/usage?pageSize=100')).body.data as Array<{
      feature: string;
      model: string;
      promptTokens: number;
      costCents: number;
    }>;

  beforeAll(async () => {
    await createPostgresDatabase(info, DB);
    const filler = Array.from(
      { length: FILLER },
      (_, i) =>
        `CREATE TABLE ops.sys_${WORDS[i % WORDS.length]}_${String(i).padStart(3, '0')} (id integer PRIMARY KEY, created_at timestamptz, payload jsonb, kind text, note text, status text);`,
    ).join('\n');
    await postgresAdmin(
      info,
      DB,
      `CREATE SCHEMA ops; CREATE SCHEMA fin; ${filler}
       CREATE TABLE fin.reimbursements (id integer PRIMARY KEY, amt numeric, dt date);
       GRANT USAGE ON SCHEMA ops, fin TO ${info.user};
       GRANT SELECT ON ALL TABLES IN SCHEMA ops, fin TO ${info.user};`,
    );
    fake = await startFakeOpenAI();
    embeddingsOn(true);
    s = await startTestServer({
      env: {
        OPENAI_API_KEY: fake.apiKey,
        OPENAI_BASE_URL: fake.url,
        LOUPE_MODEL: 'test-model',
        LOUPE_AI_RATE_LIMIT: '10000',
        LOUPE_EMBEDDING_MODEL: MODEL,
        LOUPE_EMBEDDING_DIMENSIONS: String(DIMENSIONS),
      },
    });
    await addBalance(s.app.orgId, s.app.adminUserId, 1_000_000);
    connectionId = await createConnection(s, { ...postgresConnection(info, { database: DB }), name: 'Ops' });
  }, 120_000);
  afterAll(async () => {
    embeddingsOn(false);
    await s?.stop();
    await fake?.stop();
  });
  beforeEach(() => {
    expect(fake.pending(), 'every scripted turn of the previous test was used').toBe(0);
    fake.reset();
    fake.setEmbeddings('vectors');
    resetEmbeddingCooldowns();
    embeddingsOn(true);
  });

  it('builds the index at introspection, stores it compactly and records its cost as schema_embedding', async () => {
    fake.script({ content: 'Operations tables.' });
    const t = await s.call('POST', `/connections/${connectionId}/test`);
    expect(t.body.data, t.text).toMatchObject({ success: true, tableCount: TABLES });

    const sent = embeddingRequests(fake);
    expect(sent.length).toBeGreaterThan(0);
    const inputs = sent.flatMap((r) => r.body.input as string[]);
    expect(inputs).toHaveLength(TABLES);
    expect(sent.every((r) => r.body.model === MODEL && r.body.dimensions === DIMENSIONS)).toBe(true);
    expect(sent.every((r) => r.body.encoding_format === 'float')).toBe(true);
    // What is sent for a table: its name and name words, and its columns; never rows.
    expect(inputs).toContain('Table fin.reimbursements (reimbursements)\nColumns: id, amt, dt');

    const records = (await usage()).filter((u) => u.feature === 'schema_embedding');
    expect(records).toHaveLength(sent.length);
    for (const u of records) {
      expect(u.model).toBe(MODEL);
      expect(u.promptTokens).toBeGreaterThan(0);
      expect(u.costCents).toBeGreaterThan(0);
    }

    const index = await loadEmbeddingIndex(s.app.orgId, connectionId);
    expect(index).toMatchObject({ model: MODEL, dimensions: DIMENSIONS });
    expect(index!.entries).toHaveLength(TABLES);
    expect(index!.entries.find((e) => e.name === TARGET)?.vector).toHaveLength(DIMENSIONS);
    const items = await db.query({ pk: connPk(s.app.orgId, connectionId), prefix: 'EMBIDX' });
    expect(items.length).toBeGreaterThanOrEqual(2); // meta and at least one chunk
    for (const item of items) expect(Buffer.byteLength(JSON.stringify(item))).toBeLessThan(400_000);
  });

  it('re-reading the schema embeds only the tables whose text changed', async () => {
    fake.script({ content: 'Same.' });
    expect((await s.call('POST', `/connections/${connectionId}/schema`)).status).toBe(200);
    expect(embeddingRequests(fake)).toHaveLength(0);

    await postgresAdmin(info, DB, `COMMENT ON TABLE ops.sys_flag_008 IS 'Feature switches per tenant'`);
    fake.script({ content: 'Same.' });
    expect((await s.call('POST', `/connections/${connectionId}/schema`)).status).toBe(200);
    const inputs = embeddingRequests(fake).flatMap((r) => r.body.input as string[]);
    expect(inputs).toEqual([
      expect.stringMatching(/^Table ops\.sys_flag_008 \(sys flag 008\)\nFeature switches per tenant\n/),
    ]);
    expect((await loadEmbeddingIndex(s.app.orgId, connectionId))!.entries).toHaveLength(TABLES);
  });

  it('a misspelled table name reaches the first prompt only with embeddings on', async () => {
    embeddingsOn(false);
    const lexical = await ask(QUESTION);
    expect(lexical).toMatch(/Schema \(\d+ of 101 tables described/);
    expect(described(lexical, TARGET)).toBe(false);
    expect(described(lexical, 'ops.sys_audit_000')).toBe(true);
    // Off: not a single call to the embeddings endpoint.
    expect(embeddingRequests(fake)).toHaveLength(0);

    embeddingsOn(true);
    const before = (await usage()).filter((u) => u.feature === 'chat_embedding').length;
    const fused = await ask(QUESTION);
    expect(described(fused, TARGET)).toBe(true);
    // The lexical matches are still there.
    expect(described(fused, 'ops.sys_audit_000')).toBe(true);
    const sent = embeddingRequests(fake);
    expect(sent).toHaveLength(1);
    expect(sent[0].body.input).toEqual([QUESTION]);
    expect((await usage()).filter((u) => u.feature === 'chat_embedding')).toHaveLength(before + 1);
  });

  it('automatic annotation embeds again the tables whose annotations changed', async () => {
    const before = (await loadEmbeddingIndex(s.app.orgId, connectionId))!.entries.find(
      (e) => e.name === TARGET,
    )!;
    fake.script({ content: 'not JSON' }); // the model's rewrite is unusable: the deterministic texts stay
    const r = await s.call('POST', `/connections/${connectionId}/annotations/auto`, {
      body: { tables: [TARGET] },
    });
    expect(r.status, r.text).toBe(202);
    for (let i = 0; i < 240 && !embeddingRequests(fake).length; i++)
      await new Promise((ok) => setTimeout(ok, 250));
    const inputs = embeddingRequests(fake).flatMap((x) => x.body.input as string[]);
    expect(inputs).toHaveLength(1);
    expect(inputs[0]).toMatch(/^Table fin\.reimbursements \(reimbursements\)\nColumns: id, amt, dt\n\S/);
    let after = before;
    for (let i = 0; i < 40 && after.hash === before.hash; i++) {
      await new Promise((ok) => setTimeout(ok, 250));
      after = (await loadEmbeddingIndex(s.app.orgId, connectionId))!.entries.find((e) => e.name === TARGET)!;
    }
    expect(after.hash).not.toBe(before.hash);
    expect((await loadEmbeddingIndex(s.app.orgId, connectionId))!.entries).toHaveLength(TABLES);
  }, 90_000);

  const failures: Array<[string, EmbeddingsMode]> = [
    ['HTTP 500', { status: 500, message: 'embeddings backend down' }],
    ['no answer (timeout)', 'hang'],
    ['vectors of the wrong length', 'wrong-dimensions'],
    ['a body that is not an embeddings answer', 'garbage'],
  ];
  for (const [what, mode] of failures)
    it(`embeddings endpoint failing (${what}): chat answers with lexical ranking, then leaves the endpoint alone`, async () => {
      fake.setEmbeddings(mode);
      const system = await ask(QUESTION);
      expect(described(system, TARGET)).toBe(false);
      expect(described(system, 'ops.sys_audit_000')).toBe(true);
      expect(embeddingRequests(fake)).toHaveLength(1);

      // Resting: the next question does not call the endpoint, and a schema refresh still succeeds.
      fake.setEmbeddings('vectors');
      expect(described(await ask(QUESTION), TARGET)).toBe(false);
      fake.script({ content: 'Same.' });
      await postgresAdmin(info, DB, `COMMENT ON TABLE ops.sys_job_004 IS 'Batch runs ${what}'`);
      expect((await s.call('POST', `/connections/${connectionId}/schema`)).status).toBe(200);
      expect(embeddingRequests(fake)).toHaveLength(1);
    }, 60_000);

  it('the index is rebuilt when the endpoint answers again after a failed build', async () => {
    fake.setEmbeddings({ status: 503, message: 'overloaded' });
    await postgresAdmin(info, DB, `COMMENT ON TABLE ops.sys_cache_001 IS 'Warm entries'`);
    fake.script({ content: 'Same.' });
    expect((await s.call('POST', `/connections/${connectionId}/schema`)).status).toBe(200);
    expect(embeddingRequests(fake)).toHaveLength(1);
    const stale = (await loadEmbeddingIndex(s.app.orgId, connectionId))!.entries.find(
      (e) => e.name === 'ops.sys_cache_001',
    )!.hash;

    resetEmbeddingCooldowns(); // ten minutes later
    fake.setEmbeddings('vectors');
    fake.script({ content: 'Same.' });
    expect((await s.call('POST', `/connections/${connectionId}/schema`)).status).toBe(200);
    // The table changed during the failed build, and the one whose comment changed while the endpoint
    // rested (the failure tests above); nothing else.
    const inputs = embeddingRequests(fake)
      .slice(1)
      .flatMap((r) => r.body.input as string[]);
    expect(inputs).toEqual([
      expect.stringMatching(/^Table ops\.sys_cache_001 .*\nWarm entries\n/),
      expect.stringMatching(
        /^Table ops\.sys_job_004 .*\nBatch runs a body that is not an embeddings answer\n/,
      ),
    ]);
    const fresh = (await loadEmbeddingIndex(s.app.orgId, connectionId))!.entries.find(
      (e) => e.name === 'ops.sys_cache_001',
    )!.hash;
    expect(fresh).not.toBe(stale);
  });
  it("a user's annotation edits embed the edited table again, coalesced, paid by the editor", async () => {
    const TABLE = 'ops.sys_token_006';
    const pk = connPk(s.app.orgId, connectionId);
    const entryOf = async () =>
      (await loadEmbeddingIndex(s.app.orgId, connectionId))!.entries.find((e) => e.name === TABLE)!;
    /** Waits for the refresh's embeddings request after `count` earlier ones, and for the index to change. */
    const refreshed = async (count: number, hashBefore: string) => {
      await waitFor(
        'the refresh to call the embeddings endpoint',
        async () => embeddingRequests(fake).length > count,
        30_000,
      );
      const entry = await waitFor('the index to change', async () => {
        const e = await entryOf();
        return e.hash !== hashBefore && e;
      });
      // The refresh removed its marker before reading the annotations.
      expect(await db.get(pk, 'EMBQUEUED')).toBeUndefined();
      return {
        inputs: embeddingRequests(fake)
          .slice(count)
          .flatMap((r) => r.body.input as string[]),
        entry,
      };
    };
    const charged = async () => (await usage()).filter((u) => u.feature === 'schema_embedding').length;
    const chargedBefore = await charged();

    // Two edits of the same table in a burst: one refresh reads both.
    let entry = await entryOf();
    const a = await s.call('POST', `/connections/${connectionId}/annotations`, {
      body: { tableName: TABLE, annotation: 'Signed refresh credentials of partner integrations' },
    });
    expect(a.status, a.text).toBe(201);
    expect(await db.get(pk, 'EMBQUEUED')).toBeDefined();
    const b = await s.call('POST', `/connections/${connectionId}/annotations`, {
      body: { tableName: TABLE, columnName: 'kind', annotation: 'Token family' },
    });
    expect(b.status, b.text).toBe(201);
    let r = await refreshed(0, entry.hash);
    expect(r.inputs).toEqual([
      expect.stringMatching(
        /^Table ops\.sys_token_006 .*\nColumns: .*\nSigned refresh credentials of partner integrations\nkind: Token family$/,
      ),
    ]);
    expect(await charged()).toBe(chargedBefore + 1);
    expect((await loadEmbeddingIndex(s.app.orgId, connectionId))!.entries).toHaveLength(TABLES);

    // An update, then a delete: each embeds the table's new text, and only that table.
    entry = r.entry;
    const u = await s.call('PATCH', `/connections/${connectionId}/annotations/${a.body.data.id}`, {
      body: { annotation: 'Partner refresh tokens, rotated weekly' },
    });
    expect(u.status, u.text).toBe(200);
    r = await refreshed(1, entry.hash);
    expect(r.inputs).toEqual([
      expect.stringMatching(/\nPartner refresh tokens, rotated weekly\nkind: Token family$/),
    ]);
    entry = r.entry;
    const d = await s.call('DELETE', `/connections/${connectionId}/annotations/${b.body.data.id}`);
    expect(d.status, d.text).toBe(200);
    r = await refreshed(2, entry.hash);
    expect(r.inputs).toEqual([expect.stringMatching(/\nPartner refresh tokens, rotated weekly$/)]);

    // The queue refusing the refresh never fails the edit, and leaves no marker to block the next one.
    const send = vi.spyOn(queue(), 'send').mockRejectedValueOnce(new Error('queue unavailable'));
    const refused = await s.call('PATCH', `/connections/${connectionId}/annotations/${a.body.data.id}`, {
      body: { annotation: 'Edited while the queue is down' },
    });
    expect(refused.status, refused.text).toBe(200);
    expect(send).toHaveBeenCalledTimes(1);
    expect(await db.get(pk, 'EMBQUEUED')).toBeUndefined();
    send.mockRestore();

    // With the index off, an edit queues nothing.
    embeddingsOn(false);
    const off = await s.call('PATCH', `/connections/${connectionId}/annotations/${a.body.data.id}`, {
      body: { annotation: 'Not embedded' },
    });
    expect(off.status, off.text).toBe(200);
    expect(await db.get(pk, 'EMBQUEUED')).toBeUndefined();
  }, 90_000);

  it('hostile annotation edits (another organization, a member without the connection, bad bodies, unknown ids) queue nothing and change nothing', async () => {
    const TABLE = 'ops.sys_setting_007';
    const pk = connPk(s.app.orgId, connectionId);
    const mine = await s.call('POST', `/connections/${connectionId}/annotations`, {
      body: { tableName: TABLE, annotation: 'Tenant settings' },
    });
    expect(mine.status, mine.text).toBe(201);
    await waitFor('the refresh of the setup edit', async () => !(await db.get(pk, 'EMBQUEUED')), 30_000);
    await waitFor('its embeddings request', async () => embeddingRequests(fake).length === 1, 30_000);
    const annotationsBefore = (await s.call('GET', `/connections/${connectionId}/annotations?pageSize=100`))
      .body.data;
    const indexBefore = (await loadEmbeddingIndex(s.app.orgId, connectionId))!.entries.map((e) => e.hash);

    const other = await createOrganization({ name: 'Elsewhere', adminEmail: 'admin@elsewhere.example' });
    const m = await s.call('POST', '/members', {
      body: { email: 'no-access@example.com', name: 'no access', role: 'member', connectionIds: [] },
    });
    expect(m.status, m.text).toBe(201);
    const k = await s.call('POST', `/members/${m.body.data.id}/keys`, { body: { name: 'k' } });
    const noAccess = k.body.data.key as string;
    const base = `/connections/${connectionId}/annotations`;
    const id = mine.body.data.id as string;
    const cases: Array<[string, string, string, { key?: string; body?: unknown }, number]> = [
      [
        'another organization creates',
        'POST',
        base,
        { key: other.key, body: { tableName: TABLE, annotation: 'x' } },
        404,
      ],
      [
        'another organization updates',
        'PATCH',
        `${base}/${id}`,
        { key: other.key, body: { annotation: 'x' } },
        404,
      ],
      ['another organization deletes', 'DELETE', `${base}/${id}`, { key: other.key }, 404],
      [
        'a member without the connection creates',
        'POST',
        base,
        { key: noAccess, body: { tableName: TABLE, annotation: 'x' } },
        404,
      ],
      [
        'a member without the connection updates',
        'PATCH',
        `${base}/${id}`,
        { key: noAccess, body: { annotation: 'x' } },
        404,
      ],
      ['a member without the connection deletes', 'DELETE', `${base}/${id}`, { key: noAccess }, 404],
      ['no key', 'PATCH', `${base}/${id}`, { key: null as never, body: { annotation: 'x' } }, 401],
      ['an empty annotation', 'POST', base, { body: { tableName: TABLE, annotation: '   ' } }, 400],
      ['no table', 'POST', base, { body: { annotation: 'orphan' } }, 400],
      [
        'an annotation over 10,000 characters',
        'PATCH',
        `${base}/${id}`,
        { body: { annotation: 'a'.repeat(10_001) } },
        400,
      ],
      ['an empty update', 'PATCH', `${base}/${id}`, { body: {} }, 400],
      [
        'a column name that is an object',
        'POST',
        base,
        { body: { tableName: TABLE, columnName: { $ne: 1 }, annotation: 'x' } },
        400,
      ],
      ['an unknown annotation id', 'PATCH', `${base}/no-such-id`, { body: { annotation: 'x' } }, 404],
      ['an id with a key separator', 'DELETE', `${base}/${encodeURIComponent('x#ANN#ops')}`, {}, 404],
      [
        "another connection's path",
        'PATCH',
        `/connections/no-such-connection/annotations/${id}`,
        { body: { annotation: 'x' } },
        404,
      ],
    ];
    for (const [what, method, path, opts, status] of cases) {
      const r = await s.call(method, path, opts as never);
      expect(r.status, `${what}: ${r.text}`).toBe(status);
      expect(r.body.error?.code, what).toBeTruthy();
      expect(await db.get(pk, 'EMBQUEUED'), what).toBeUndefined();
    }
    expect(await db.get(connPk(other.orgId, connectionId), 'EMBQUEUED')).toBeUndefined();
    expect((await s.call('GET', `${base}?pageSize=100`)).body.data).toEqual(annotationsBefore);
    await sleep(6_000); // longer than the refresh delay: nothing was queued, so nothing is embedded
    expect(embeddingRequests(fake)).toHaveLength(1);
    expect((await loadEmbeddingIndex(s.app.orgId, connectionId))!.entries.map((e) => e.hash)).toEqual(
      indexBefore,
    );
  }, 90_000);

  it('a queued refresh for a connection deleted meanwhile writes nothing', async () => {
    const { runEmbeddingRefresh } = await import('../../shared/connections/embedding-refresh');
    const gone = 'conn-that-was-deleted';
    await runEmbeddingRefresh({
      orgId: s.app.orgId,
      connectionId: gone,
      tables: null,
      requestedBy: s.app.adminUserId,
      requestedAt: new Date().toISOString(),
      embedOnly: true,
    });
    expect(await db.query({ pk: connPk(s.app.orgId, gone) })).toEqual([]);
    expect(embeddingRequests(fake)).toHaveLength(0);
  });
});
