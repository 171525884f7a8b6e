import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe } from 'vitest';
import { placeSqlite } from '../support/connections';
import { startTestServer, type TestServer } from '../support/server';
import { connectionFlow, FLOW_STATEMENTS, type FlowDb } from './connections-flow';

describe('connections on SQLite', () => {
  let s: TestServer;
  let db: FlowDb;
  const dir = mkdtempSync(join(tmpdir(), 'loupe-conn-sqlite-'));
  const file = join(dir, 'flow.sqlite');
  const admin = async (sql: string) => {
    const d = new DatabaseSync(file);
    try {
      d.exec(sql);
    } finally {
      d.close();
    }
  };

  beforeAll(async () => {
    await admin(`
      PRAGMA foreign_keys = ON;
      CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
      CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL REFERENCES customers(id),
        total NUMERIC(10,2) NOT NULL, status TEXT NOT NULL);
      INSERT INTO customers VALUES (1, 'Ada'), (2, 'Grace'), (3, 'Linus');
      INSERT INTO orders VALUES (1, 1, 10.50, 'paid'), (2, 1, 20.00, 'open'), (3, 2, 5.25, 'paid');`);
    s = await startTestServer();
    db = {
      body: { name: 'SQLite flow', type: 'SQLITE', database: placeSqlite(s, file) },
      password: 'sqlite-takes-no-password-sentinel',
      failing: {
        body: { name: 'missing file', type: 'SQLITE', database: 'missing.sqlite' },
        stage: 'DATABASE',
      },
      admin,
      ...FLOW_STATEMENTS,
    };
  });
  afterAll(async () => {
    await s?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  connectionFlow(() => ({ s, db }));
});
