import { afterAll, beforeAll, describe, inject } from 'vitest';
import { createPostgresDatabase, postgresAdmin, postgresConnection } from '../support/connections';
import { startTestServer, type TestServer } from '../support/server';
import { connectionFlow, FLOW_STATEMENTS, type FlowDb } from './connections-flow';

const DB = 'conn_flow_pg';

describe('connections on PostgreSQL', () => {
  let s: TestServer;
  let db: FlowDb;
  const info = inject('postgres');
  beforeAll(async () => {
    await createPostgresDatabase(info, DB);
    const setup = `
      CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
      CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL REFERENCES customers(id),
        total NUMERIC(10,2) NOT NULL, status TEXT NOT NULL);
      INSERT INTO customers VALUES (1, 'Ada'), (2, 'Grace'), (3, 'Linus');
      INSERT INTO orders VALUES (1, 1, 10.50, 'paid'), (2, 1, 20.00, 'open'), (3, 2, 5.25, 'paid');
      ALTER TABLE customers OWNER TO ${info.user}; ALTER TABLE orders OWNER TO ${info.user};`;
    await postgresAdmin(info, DB, setup);
    s = await startTestServer();
    const base = postgresConnection(info, { name: 'PG flow', database: DB });
    db = {
      body: base,
      password: info.password,
      failing: {
        body: { ...base, name: 'wrong password', password: 'definitely-Wrong-pw-123' },
        stage: 'AUTH',
        password: 'definitely-Wrong-pw-123',
      },
      admin: async (sql) => {
        await postgresAdmin(
          info,
          DB,
          `${sql}; ${sql.startsWith('CREATE') ? `ALTER TABLE flow_extra OWNER TO ${info.user}` : 'SELECT 1'}`,
        );
      },
      ...FLOW_STATEMENTS,
    };
  });
  afterAll(async () => {
    await s?.stop();
  });

  connectionFlow(() => ({ s, db }));
});
