import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { closeAllDrivers, driverFor } from '../../shared/databases/drivers/index';
import type { ConnectionTarget } from '../../shared/databases/drivers/types';
import { runReadOnly } from '../../shared/databases/run';
import { resetConfig } from '../../shared/platform/config';
import { failure } from '../support/drivers';
import { waitFor } from '../support/wait';

// Files live in the organization's folder `<LOUPE_SQLITE_ROOT>/org-a/`; S3 objects under `<bucket>/org-a/`.
const root = mkdtempSync(join(tmpdir(), 'loupe-drv-sqlite-'));
const dir = join(root, 'org-a');
mkdirSync(dir);
process.env.LOUPE_SQLITE_ROOT = root;
process.env.LOUPE_SQLITE_BUCKET = 'loupe-test-bucket';
resetConfig();
const file = join(dir, 'shop.db');

const target = (over: Partial<ConnectionTarget> = {}): ConnectionTarget => ({
  id: `sqlite-${process.pid}`,
  version: '1',
  orgId: 'org-a',
  type: 'SQLITE',
  host: '',
  port: null,
  database: file,
  username: '',
  password: '',
  sslEnabled: false,
  ...over,
});

const count = () => {
  const d = new DatabaseSync(file, { readOnly: true });
  const n = Number((d.prepare('SELECT count(*) AS n FROM items').get() as { n: number }).n);
  d.close();
  return n;
};

beforeAll(() => {
  const d = new DatabaseSync(file);
  d.exec(`CREATE TABLE parents (id INTEGER PRIMARY KEY, label TEXT NOT NULL);
    CREATE TABLE items (id INTEGER PRIMARY KEY, parent_id INTEGER REFERENCES parents(id), big INTEGER, price REAL, raw BLOB, note TEXT);
    CREATE VIEW item_view AS SELECT id, note FROM items;
    INSERT INTO parents VALUES (1, 'one');`);
  const ins = d.prepare('INSERT INTO items (parent_id, big, price, raw, note) VALUES (1, ?, 1.5, ?, ?)');
  for (let i = 1; i <= 30; i++)
    ins.run(9007199254740993n + BigInt(i), new Uint8Array([1, 2, 255]), `row ${i}`);
  d.close();
});

afterAll(async () => {
  await closeAllDrivers();
  rmSync(root, { recursive: true, force: true });
});

describe('SQLite driver', () => {
  it('pings and reports the SQLite version', async () => {
    expect((await (await driverFor(target())).ping()).serverVersion).toMatch(/^3\./);
  });

  it('returns values as JSON that keeps their meaning', async () => {
    const r = await runReadOnly(target(), 'SELECT id, big, price, raw, note FROM items ORDER BY id LIMIT 1');
    expect(r.rows[0]).toEqual({
      id: 1,
      big: '9007199254740994',
      price: 1.5,
      raw: Buffer.from([1, 2, 255]).toString('base64'),
      note: 'row 1',
    });
  });

  it('binds ? parameters', async () => {
    const r = await runReadOnly(target(), 'SELECT count(*) AS n FROM items WHERE id > ? AND note LIKE ?', {
      params: [25, 'row%'],
    });
    expect(r.rows).toEqual([{ n: 5 }]);
  });

  it('stops at maxRows and at the byte cap', async () => {
    const r = await runReadOnly(target(), 'SELECT id FROM items ORDER BY id', { maxRows: 4 });
    expect(r.rows.map((x) => x.id)).toEqual([1, 2, 3, 4]);
    expect(r.truncated).toBe(true);
    const b = await runReadOnly(target(), "SELECT printf('%.1000c', 'x') AS s FROM items", {
      maxBytes: 5000,
    });
    expect(b.rows.length).toBeLessThan(5);
    expect(b.truncated).toBe(true);
    const huge = await runReadOnly(
      target(),
      'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c',
      { maxRows: 10 },
    );
    expect(huge.rows).toHaveLength(10);
    expect(huge.truncated).toBe(true);
  });

  it('runs VALUES, EXPLAIN QUERY PLAN and read-only PRAGMAs', async () => {
    expect((await runReadOnly(target(), 'VALUES (1, 2)')).rows).toEqual([{ column1: 1, column2: 2 }]);
    expect((await runReadOnly(target(), 'EXPLAIN QUERY PLAN SELECT * FROM items')).columns).toContain(
      'detail',
    );
    expect((await runReadOnly(target(), 'PRAGMA table_info(items)')).rows.map((r) => r.name)).toContain(
      'big',
    );
  });

  it('stops a statement past its timeout with 504 QUERY_TIMEOUT, and works afterwards', async () => {
    const e = await failure(
      runReadOnly(
        target(),
        'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c',
        { timeoutMs: 300 },
      ),
    );
    expect(e.status).toBe(504);
    expect(e.code).toBe('QUERY_TIMEOUT');
    expect((await runReadOnly(target(), 'SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
  });

  it('maps a rejected statement to 422 QUERY_FAILED', async () => {
    const e = await failure(runReadOnly(target(), 'SELECT nope FROM items'));
    expect(e.code).toBe('QUERY_FAILED');
    expect(e.message).toContain('no such column: nope');
  });

  it('introspects tables, views, columns, keys and row counts', async () => {
    const s = await (await driverFor(target())).introspect();
    expect(s.tables.map((t) => t.name)).toEqual(['item_view', 'items', 'parents']);
    const items = s.tables.find((t) => t.name === 'items');
    expect(items).toMatchObject({ kind: 'table', primaryKey: ['id'], rowEstimate: 30 });
    expect(items?.foreignKeys).toEqual([
      { columns: ['parent_id'], referencedTable: 'parents', referencedColumns: ['id'] },
    ]);
    expect(items?.columns.find((c) => c.name === 'price')).toEqual({
      name: 'price',
      type: 'REAL',
      nullable: true,
      primaryKey: false,
    });
    expect(
      s.tables.find((t) => t.name === 'parents')?.columns.find((c) => c.name === 'label')?.nullable,
    ).toBe(false);
    expect(s.tables.find((t) => t.name === 'item_view')?.kind).toBe('view');
  });
});

describe('SQLite read-only enforcement (every attempt leaves the file unchanged)', () => {
  const attempts: [string, string][] = [
    ['DELETE', 'DELETE FROM items'],
    ['UPDATE', 'UPDATE items SET big = 0'],
    ['INSERT', 'INSERT INTO items (note) VALUES (1)'],
    ['DROP', 'DROP TABLE items'],
    ['stacked with a comment', 'SELECT 1; -- x\nDROP TABLE items'],
    ['data-modifying CTE', 'WITH d AS (SELECT 1) DELETE FROM items'],
    ['ATTACH', `ATTACH DATABASE '${join(dir, 'other.db')}' AS other`],
    ['PRAGMA write', 'PRAGMA user_version = 7'],
    ['PRAGMA journal_mode', 'PRAGMA journal_mode = DELETE'],
    ['PRAGMA query_only off', 'PRAGMA query_only = OFF'],
    ['load_extension', "SELECT load_extension('/tmp/x.so')"],
    ['VACUUM INTO', `VACUUM INTO '${join(dir, 'copy.db')}'`],
    ['CREATE TEMP TABLE', 'CREATE TEMP TABLE t AS SELECT * FROM items'],
    ['REPLACE', "REPLACE INTO items (id, note) VALUES (1, 'x')"],
  ];
  for (const [name, sql] of attempts) {
    it(`refuses ${name}`, async () => {
      const before = readFileSync(file);
      const e = await failure(runReadOnly(target(), sql));
      expect(e.status).toBe(400);
      expect(e.code).toBe('READ_ONLY_VIOLATION');
      expect(readFileSync(file).equals(before)).toBe(true);
      expect(count()).toBe(30);
    });
  }

  it('the read-only open, query_only and the authorizer stop writes even when the guard is bypassed', async () => {
    const d = await driverFor(target());
    const opts = { maxRows: 10, maxBytes: 1e6, timeoutMs: 5000 };
    const before = readFileSync(file);
    await expect(d.query('DELETE FROM items', opts)).rejects.toThrow(/not authorized|readonly|read-only/i);
    await expect(d.query(`ATTACH DATABASE '${join(dir, 'x.db')}' AS x`, opts)).rejects.toThrow(
      /not authorized/i,
    );
    await expect(d.query('PRAGMA user_version = 7', opts)).rejects.toThrow(/not authorized/i);
    await expect(d.query("SELECT load_extension('/tmp/x.so')", opts)).rejects.toThrow(/not authorized/i);
    expect(readFileSync(file).equals(before)).toBe(true);
  });

  it('refused PRAGMAs get truthful codes: never CONNECTION_FAILED, the file unchanged', async () => {
    const before = readFileSync(file);
    const cases: Array<[string, number, string]> = [
      // SQLite reads the argument as a schema name ("unknown database 'wal'"): the statement is wrong.
      ["SELECT * FROM pragma_journal_mode('wal')", 422, 'QUERY_FAILED'],
      ["SELECT * FROM pragma_journal_mode('main')", 400, 'READ_ONLY_VIOLATION'],
      ['SELECT * FROM pragma_journal_mode', 400, 'READ_ONLY_VIOLATION'],
      ['SELECT * FROM pragma_wal_checkpoint', 422, 'QUERY_FAILED'],
      ['SELECT * FROM pragma_user_version(5)', 422, 'QUERY_FAILED'],
      ["SELECT * FROM pragma_foreign_keys('on')", 422, 'QUERY_FAILED'],
    ];
    for (const [sql, status, code] of cases) {
      const e = await failure(runReadOnly(target({ id: 'sqlite-pragma' }), sql));
      // The read-only guard may refuse some of these first (400 READ_ONLY_VIOLATION), which is truthful too.
      if (e.status === 400) expect(e.code, sql).toBe('READ_ONLY_VIOLATION');
      else expect([e.status, e.code], sql).toEqual([status, code]);
      expect(e.code, sql).not.toBe('CONNECTION_FAILED');
    }
    // Straight to the driver (no guard): the authorizer's refusal is 400, the bad argument 422.
    const d = await driverFor(target({ id: 'sqlite-pragma-driver' }));
    const opts = { maxRows: 10, maxBytes: 1 << 20, timeoutMs: 5_000 };
    await expect(d.query('SELECT * FROM pragma_journal_mode', opts)).rejects.toMatchObject({
      status: 400,
      code: 'READ_ONLY_VIOLATION',
      details: { statementType: 'PRAGMA' },
    });
    await expect(d.query("SELECT * FROM pragma_journal_mode('wal')", opts)).rejects.toMatchObject({
      status: 422,
      code: 'QUERY_FAILED',
    });
    expect(readFileSync(file).equals(before)).toBe(true);
  });

  it('runs statements in a child process that exits when idle and comes back on the next call', async () => {
    const { sqliteDriver } = await import('../../shared/databases/drivers/sqlite');
    const children = () =>
      readdirSync('/proc')
        .filter((e) => /^\d+$/.test(e))
        .filter((pid) => {
          try {
            const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
            const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
            return (
              ppid === process.pid && readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('node:sqlite')
            );
          } catch {
            return false;
          }
        });
    // Other drivers' children may come and go meanwhile (their own idle timers): this driver's child is
    // the one that appears with its first query, and it is followed by its pid.
    const before = new Set(children());
    const d = sqliteDriver(target({ id: 'sqlite-idle' }), { idleMs: 300 });
    const opts = { maxRows: 10, maxBytes: 1 << 20, timeoutMs: 5_000 };
    expect((await d.query('SELECT count(*) AS n FROM items', opts)).rows).toEqual([{ n: 30 }]);
    const mine = children().filter((pid) => !before.has(pid));
    expect(mine).toHaveLength(1);
    await waitFor('the idle child to exit', async () => !children().includes(mine[0]));
    expect((await d.query('SELECT count(*) AS n FROM items', opts)).rows).toEqual([{ n: 30 }]);
    expect(children().filter((pid) => !before.has(pid) && pid !== mine[0])).toHaveLength(1);
    await d.close();
  });

  it('accepts double-quoted string literals as the sqlite3 shell does; real identifiers still win', async () => {
    const r = await runReadOnly(
      target({ id: 'sqlite-dqs' }),
      'SELECT "plain text" AS v, count(*) AS n FROM items WHERE "id" > 0',
    );
    expect(r.rows).toEqual([{ v: 'plain text', n: 30 }]);
  });

  it('opens the file read-only, so a missing file is not created', async () => {
    const missing = join(dir, 'missing.db');
    const e = await failure(runReadOnly(target({ id: 'sqlite-missing', database: missing }), 'SELECT 1'));
    expect(e.code).toBe('CONNECTION_FAILED');
    expect(() => readFileSync(missing)).toThrow();
  });

  it('reports a file that is not a database', async () => {
    const bogus = join(dir, 'bogus.db');
    writeFileSync(bogus, 'this is not a database '.repeat(100));
    const e = await failure(runReadOnly(target({ id: 'sqlite-bogus', database: bogus }), 'SELECT 1'));
    expect(e.code).toBe('CONNECTION_FAILED');
    expect((e.details as { diagnosis: { title: string } }).diagnosis.title).toBe('Not a SQLite database');
  });
});

describe('SQLite from S3 (s3://bucket/key, S3 mocked with aws-sdk-client-mock)', () => {
  const s3 = mockClient(S3Client);
  const s3Target = (id: string, key: string): ConnectionTarget =>
    target({ id, database: `s3://loupe-test-bucket/org-a/${key}` });
  const body = (path: string) => ({ transformToByteArray: async () => new Uint8Array(readFileSync(path)) });
  afterAll(() => s3.restore());

  it('copies the object to the temporary disk, opens it read-only and reuses the copy', async () => {
    s3.reset();
    s3.on(GetObjectCommand).resolves({ ETag: '"v1"', Body: body(file) as never });
    const r = await runReadOnly(s3Target('s3-a', 'shop-a.db'), 'SELECT count(*) AS n FROM items');
    expect(r.rows).toEqual([{ n: 30 }]);
    const calls = s3.commandCalls(GetObjectCommand);
    expect(calls).toHaveLength(1);
    expect(calls[0].args[0].input).toMatchObject({
      Bucket: 'loupe-test-bucket',
      Key: 'org-a/shop-a.db',
      IfNoneMatch: undefined,
    });
    await runReadOnly(s3Target('s3-a', 'shop-a.db'), 'SELECT 1 AS one');
    expect(s3.commandCalls(GetObjectCommand)).toHaveLength(1);
  });

  it('re-checks the ETag after a minute: 304 keeps the copy, a new ETag downloads the new file', async () => {
    s3.reset();
    s3.on(GetObjectCommand).resolves({ ETag: '"e1"', Body: body(file) as never });
    const t = s3Target('s3-b', 'shop-b.db');
    expect((await runReadOnly(t, 'SELECT count(*) AS n FROM items')).rows).toEqual([{ n: 30 }]);
    const realNow = Date.now;
    const later = realNow() + 61_000;
    const spy = vi.spyOn(Date, 'now').mockImplementation(() => later);
    try {
      s3.reset();
      s3.on(GetObjectCommand).rejects(
        Object.assign(new Error('Not Modified'), { name: 'NotModified', $metadata: { httpStatusCode: 304 } }),
      );
      expect((await runReadOnly(t, 'SELECT count(*) AS n FROM items')).rows).toEqual([{ n: 30 }]);
      expect(s3.commandCalls(GetObjectCommand)[0].args[0].input.IfNoneMatch).toBe('e1');
      // A changed object: a different file with another table.
      const other = join(dir, 'other.db');
      const d = new DatabaseSync(other);
      d.exec("CREATE TABLE fresh (v TEXT); INSERT INTO fresh VALUES ('new');");
      d.close();
      spy.mockImplementation(() => later + 61_000);
      s3.reset();
      s3.on(GetObjectCommand).resolves({ ETag: '"e2"', Body: body(other) as never });
      expect((await runReadOnly(t, 'SELECT v FROM fresh')).rows).toEqual([{ v: 'new' }]);
    } finally {
      spy.mockRestore();
    }
  });

  it('a missing object is CONNECTION_FAILED with a DATABASE diagnosis naming the S3 URL', async () => {
    s3.reset();
    s3.on(GetObjectCommand).rejects(
      Object.assign(new Error('The specified key does not exist.'), {
        name: 'NoSuchKey',
        $metadata: { httpStatusCode: 404 },
      }),
    );
    const t = s3Target('s3-c', 'missing.db');
    const e = await failure(runReadOnly(t, 'SELECT 1'));
    expect(e.code).toBe('CONNECTION_FAILED');
    const diagnosis = (e.details as { diagnosis: { stage: string; explanation: string } }).diagnosis;
    expect(diagnosis.stage).toBe('DATABASE');
    expect(diagnosis.explanation).toContain('s3://loupe-test-bucket/org-a/missing.db');
  });
});

describe('SQLite sources stay inside the organization (folder and S3 prefix)', () => {
  const s3 = mockClient(S3Client);
  const body = (path: string) => ({ transformToByteArray: async () => new Uint8Array(readFileSync(path)) });
  afterAll(() => s3.restore());
  const orgB = (database: string, id = `b-${Math.random()}`) => target({ id, orgId: 'org-b', database });
  const diagnosisOf = (e: { details?: unknown }) =>
    (e.details as { diagnosis: { title: string; explanation: string; fixSteps: string[] } }).diagnosis;
  const outsideTitle = "SQLite source outside the organization's area";

  beforeAll(() => {
    mkdirSync(join(root, 'org-b'), { recursive: true });
    // An operator's mistake or an attack: links in org-b's folder that lead to org-a's file and out of the root.
    symlinkSync(file, join(root, 'org-b', 'link-to-a.db'));
    symlinkSync(join(dir, 'gone.db'), join(root, 'org-b', 'dangling.db'));
    symlinkSync(dir, join(root, 'org-b', 'dir-link'));
  });

  const hostile: Array<[string, string]> = [
    ['the absolute path of org-a’s file', file],
    ['a relative path climbing into org-a', '../org-a/shop.db'],
    ['a path climbing out and back in', '../org-b/../org-a/shop.db'],
    ['a symlink in org-b to org-a’s file', 'link-to-a.db'],
    ['a symlinked folder in org-b to org-a', 'dir-link/shop.db'],
    ['a dangling symlink', 'dangling.db'],
    ['an existing file outside the root', '/etc/passwd'],
    ['a missing file outside the root', '/etc/no-such-file-here.db'],
    ['the root itself', '..'],
    ['the org folder itself', '.'],
    ['org-a’s S3 object', 's3://loupe-test-bucket/org-a/shop-a.db'],
    ['another bucket under the org prefix', 's3://other-bucket/org-b/shop.db'],
    ['an S3 key climbing out of the prefix', 's3://loupe-test-bucket/org-b/../org-a/shop-a.db'],
    ['an S3 key prefix that only starts like the org', 's3://loupe-test-bucket/org-bb/x.db'],
    ['an S3 URL without key', 's3://loupe-test-bucket/'],
  ];
  for (const [name, database] of hostile)
    it(`org-b cannot open ${name}`, async () => {
      s3.reset();
      s3.on(GetObjectCommand).resolves({ ETag: '"v1"', Body: body(file) as never });
      const e = await failure(runReadOnly(orgB(database), 'SELECT count(*) AS n FROM items'));
      expect(e.code).toBe('CONNECTION_FAILED');
      expect(diagnosisOf(e).title).toBe(outsideTitle);
      expect(JSON.stringify(e)).not.toContain('30');
      expect(s3.commandCalls(GetObjectCommand)).toHaveLength(0);
    });

  it('an existing and a missing path outside the root get exactly the same answer', async () => {
    const a = await failure(runReadOnly(orgB('/etc/passwd', 'same-1'), 'SELECT 1'));
    const b = await failure(runReadOnly(orgB('/etc/nothing-here', 'same-2'), 'SELECT 1'));
    const strip = (e: { message: string; details?: unknown }) =>
      JSON.stringify({ m: e.message, d: e.details })
        .replaceAll('/etc/passwd', 'P')
        .replaceAll('/etc/nothing-here', 'P');
    expect(strip(a)).toBe(strip(b));
  });

  it('org-a still opens its own file by relative and by absolute path, and its own S3 object', async () => {
    expect(
      (await runReadOnly(target({ id: 'a-rel', database: 'shop.db' }), 'SELECT count(*) AS n FROM items'))
        .rows,
    ).toEqual([{ n: 30 }]);
    expect(
      (await runReadOnly(target({ id: 'a-abs', database: file }), 'SELECT count(*) AS n FROM items')).rows,
    ).toEqual([{ n: 30 }]);
    s3.reset();
    s3.on(GetObjectCommand).resolves({ ETag: '"own"', Body: body(file) as never });
    const r = await runReadOnly(
      target({ id: 'a-s3', database: 's3://loupe-test-bucket/org-a/own.db' }),
      'SELECT count(*) AS n FROM items',
    );
    expect(r.rows).toEqual([{ n: 30 }]);
    expect(s3.commandCalls(GetObjectCommand)[0].args[0].input).toMatchObject({
      Bucket: 'loupe-test-bucket',
      Key: 'org-a/own.db',
    });
  });

  it('deployed (LOUPE_RUNTIME=aws): local paths are refused, a relative path is the org’s own S3 object', async () => {
    process.env.LOUPE_RUNTIME = 'aws';
    resetConfig();
    try {
      s3.reset();
      s3.on(GetObjectCommand).resolves({ ETag: '"d1"', Body: body(file) as never });
      const local = await failure(runReadOnly(target({ id: 'aws-abs', database: file }), 'SELECT 1'));
      expect(diagnosisOf(local).title).toBe(outsideTitle);
      expect(s3.commandCalls(GetObjectCommand)).toHaveLength(0);
      const r = await runReadOnly(
        target({ id: 'aws-rel', database: 'team/shop.db' }),
        'SELECT count(*) AS n FROM items',
      );
      expect(r.rows).toEqual([{ n: 30 }]);
      expect(s3.commandCalls(GetObjectCommand)[0].args[0].input).toMatchObject({
        Bucket: 'loupe-test-bucket',
        Key: 'org-a/team/shop.db',
      });
      const climb = await failure(runReadOnly(orgB('../org-a/shop.db', 'aws-climb'), 'SELECT 1'));
      expect(diagnosisOf(climb).title).toBe(outsideTitle);
      expect(s3.commandCalls(GetObjectCommand)).toHaveLength(1);
    } finally {
      delete process.env.LOUPE_RUNTIME;
      resetConfig();
    }
  });

  it('a target without an organization opens nothing', async () => {
    const e = await failure(
      runReadOnly(target({ id: 'no-org', orgId: undefined, database: 'shop.db' }), 'SELECT 1'),
    );
    expect(diagnosisOf(e).title).toBe(outsideTitle);
  });
});
