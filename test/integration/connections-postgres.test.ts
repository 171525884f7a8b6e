import pg from 'pg';
import { afterAll, beforeAll, describe, inject } from 'vitest';
import { startTestServer, type TestServer } from '../support/server';
import { connectionFlow, type FlowDb } from './connections-flow';

const DB = 'conn_flow_pg';

describe('connections on PostgreSQL', () => {
  let s: TestServer;
  let db: FlowDb;
  const info = inject('postgres');
  const admin = async (database: string, sql: string) => {
    const c = new pg.Client({
      host: info.host,
      port: info.port,
      user: info.adminUser,
      password: info.adminPassword,
      database,
    });
    await c.connect();
    try {
      await c.query(sql);
    } finally {
      await c.end();
    }
  };

  beforeAll(async () => {
    await admin(info.database, `DROP DATABASE IF EXISTS ${DB}`);
    await admin(info.database, `CREATE DATABASE ${DB} OWNER ${info.user}`);
    const setup = `
      CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
      CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL REFERENCES customers(id),
        total NUMERIC(10,2) NOT NULL, status TEXT NOT NULL);
      INSERT INTO customers VALUES (1, 'Ada'), (2, 'Grace'), (3, 'Linus');
      INSERT INTO orders VALUES (1, 1, 10.50, 'paid'), (2, 1, 20.00, 'open'), (3, 2, 5.25, 'paid');
      ALTER TABLE customers OWNER TO ${info.user}; ALTER TABLE orders OWNER TO ${info.user};`;
    await admin(DB, setup);
    s = await startTestServer();
    const base = {
      name: 'PG flow',
      type: 'POSTGRES',
      host: info.host,
      port: info.port,
      database: DB,
      username: info.user,
      password: info.password,
    };
    db = {
      body: base,
      password: info.password,
      failing: {
        body: { ...base, name: 'wrong password', password: 'definitely-Wrong-pw-123' },
        stage: 'AUTH',
        password: 'definitely-Wrong-pw-123',
      },
      admin: (sql) =>
        admin(
          DB,
          sql.replace('INTEGER PRIMARY KEY', 'INTEGER PRIMARY KEY') +
            `; ${sql.startsWith('CREATE') ? `ALTER TABLE flow_extra OWNER TO ${info.user}` : 'SELECT 1'}`,
        ),
      selectCustomers: 'SELECT id, name FROM customers ORDER BY id',
      write: "UPDATE customers SET name = 'x'",
      broken: 'SELECT no_such_column FROM customers',
      customers: 'customers',
      orders: 'orders',
    };
  });
  afterAll(async () => {
    await s?.stop();
  });

  connectionFlow(() => ({ s, db }));
});
