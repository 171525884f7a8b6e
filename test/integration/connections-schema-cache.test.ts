import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropCachedSchema, loadSchema, saveSchema } from '../../shared/connections/schema-store';
import type { SchemaSnapshot } from '../../shared/databases/drivers/types';
import { db } from '../../shared/platform/db/store';
import { placeSqlite } from '../support/connections';
import { startTestServer, type TestServer } from '../support/server';

const schemaOf = (
  tables: number,
  columns: number,
  name: (t: number, c: number) => string,
): SchemaSnapshot => ({
  tables: Array.from({ length: tables }, (_, t) => ({
    name: `table_${t}`,
    kind: 'table' as const,
    columns: Array.from({ length: columns }, (_, c) => ({
      name: name(t, c),
      type: 'character varying(255)',
      nullable: c > 0,
      primaryKey: c === 0,
    })),
    primaryKey: [name(t, 0)],
    foreignKeys:
      t > 0 ? [{ columns: ['parent_id'], referencedTable: `table_${t - 1}`, referencedColumns: ['id'] }] : [],
    rowEstimate: t * 10,
  })),
});

describe('cached schema storage', () => {
  let s: TestServer;
  let org: string;
  beforeAll(async () => {
    s = await startTestServer();
    org = s.app.orgId;
  });
  afterAll(() => s.stop());

  const items = (id: string) => db.query({ pk: `ORG#${org}`, prefix: `CONNSCHEMA#${id}` });

  it('keeps a small schema inline as JSON', async () => {
    const schema = schemaOf(3, 4, (_t, c) => `c${c}`);
    await saveSchema(org, 'small', {
      schema,
      schemaSummary: 'three tables',
      schemaUpdatedAt: '2026-01-01T00:00:00.000Z',
    });
    const got = await loadSchema(org, 'small');
    expect(got).toEqual({
      schema,
      schemaSummary: 'three tables',
      schemaUpdatedAt: '2026-01-01T00:00:00.000Z',
    });
    const stored = await items('small');
    expect(stored).toHaveLength(1);
    expect(stored[0].encoding).toBe('json');
  });

  it('stores a 300-table schema compressed and reads it back intact', async () => {
    const schema = schemaOf(300, 30, (t, c) => `column_${t}_${c}`);
    expect(JSON.stringify(schema).length).toBeGreaterThan(300_000);
    await saveSchema(org, 'wide', {
      schema,
      schemaSummary: 'wide',
      schemaUpdatedAt: '2026-01-01T00:00:00.000Z',
    });
    const stored = await items('wide');
    expect(stored[0].encoding).toBe('gzip');
    expect((await loadSchema(org, 'wide'))?.schema).toEqual(schema);
  });

  it('splits a schema whose compressed form exceeds one item into chunks, and replaces them on refresh', async () => {
    const names = new Map<string, string>();
    const random = (t: number, c: number) => {
      const k = `${t}.${c}`;
      if (!names.has(k)) names.set(k, randomBytes(12).toString('hex'));
      return names.get(k)!;
    };
    const schema = schemaOf(1000, 30, random);
    await saveSchema(org, 'huge', {
      schema,
      schemaSummary: 'huge',
      schemaUpdatedAt: '2026-01-01T00:00:00.000Z',
    });
    const stored = await items('huge');
    const meta = stored.find((i) => i.sk === 'CONNSCHEMA#huge')!;
    expect(meta.chunks).toBeGreaterThan(1);
    expect(stored).toHaveLength(1 + (meta.chunks as number));
    expect((await loadSchema(org, 'huge'))?.schema).toEqual(schema);

    const smaller = schemaOf(2, 2, (_t, c) => `c${c}`);
    await saveSchema(org, 'huge', {
      schema: smaller,
      schemaSummary: null,
      schemaUpdatedAt: '2026-01-02T00:00:00.000Z',
    });
    expect(await items('huge')).toHaveLength(1);
    expect(await loadSchema(org, 'huge')).toEqual({
      schema: smaller,
      schemaSummary: null,
      schemaUpdatedAt: '2026-01-02T00:00:00.000Z',
    });
  });

  it('never replaces a newer snapshot with an older one', async () => {
    const newer = schemaOf(1, 1, () => 'newer');
    const older = schemaOf(1, 1, () => 'older');
    await saveSchema(org, 'race', {
      schema: newer,
      schemaSummary: null,
      schemaUpdatedAt: '2026-02-02T00:00:00.000Z',
    });
    await saveSchema(org, 'race', {
      schema: older,
      schemaSummary: null,
      schemaUpdatedAt: '2026-02-01T00:00:00.000Z',
    });
    expect((await loadSchema(org, 'race'))?.schema).toEqual(newer);
  });

  it('caches and serves a live 300-table database end to end', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'loupe-wide-'));
    try {
      const file = join(dir, 'wide.sqlite');
      const d = new DatabaseSync(file);
      const cols = Array.from({ length: 40 }, (_, c) => `measurement_column_${c} TEXT`).join(', ');
      d.exec('BEGIN');
      for (let t = 0; t < 300; t++)
        d.exec(
          `CREATE TABLE wide_table_${t} (id INTEGER PRIMARY KEY, parent_id INTEGER REFERENCES wide_table_${Math.max(0, t - 1)}(id), ${cols})`,
        );
      d.exec('COMMIT');
      d.close();
      const c = await s.call('POST', '/connections', {
        body: { name: 'wide', type: 'SQLITE', database: placeSqlite(s, file) },
      });
      const t = await s.call('POST', `/connections/${c.body.data.id}/test`);
      expect(t.body.data, t.text).toMatchObject({ success: true, schemaIntrospected: true, tableCount: 300 });
      const g = await s.call('GET', `/connections/${c.body.data.id}/schema`);
      expect(g.status).toBe(200);
      expect(g.body.data.schema.tables).toHaveLength(300);
      expect(g.body.data.schema.tables[0].columns).toHaveLength(42);
      const meta = (await items(c.body.data.id))[0];
      expect(meta.encoding).toBe('gzip');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('drops every item of a cached schema, and answers null when nothing is cached', async () => {
    await dropCachedSchema(org, 'wide');
    expect(await items('wide')).toEqual([]);
    expect(await loadSchema(org, 'wide')).toBeNull();
    expect(await loadSchema(org, 'never')).toBeNull();
  });
});
