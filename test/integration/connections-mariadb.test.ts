import mysql from 'mysql2/promise';
import { afterAll, beforeAll, describe, inject } from 'vitest';
import { startTestServer, type TestServer } from '../support/server';
import { connectionFlow, type FlowDb } from './connections-flow';

const maria = inject('mariadb');

async function adminRun(database: string | undefined, sql: string) {
  const c = await mysql.createConnection({
    host: maria!.host,
    port: maria!.port,
    user: maria!.adminUser,
    password: maria!.adminPassword,
    database,
    multipleStatements: true,
  });
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

/** The same MariaDB server, registered once as MYSQL and once as MARIADB, each with its own database. */
for (const type of ['MYSQL', 'MARIADB'] as const) {
  const DB = `conn_flow_${type.toLowerCase()}`;
  describe.skipIf(!maria)(`connections on MariaDB registered as ${type}`, () => {
    let s: TestServer;
    let db: FlowDb;
    beforeAll(async () => {
      const m = maria!;
      await adminRun(
        undefined,
        `DROP DATABASE IF EXISTS ${DB}; CREATE DATABASE ${DB}; GRANT ALL PRIVILEGES ON ${DB}.* TO '${m.user}'@'%';`,
      );
      await adminRun(
        DB,
        `CREATE TABLE customers (id INT PRIMARY KEY, name VARCHAR(100) NOT NULL) ENGINE=InnoDB;
         CREATE TABLE orders (id INT PRIMARY KEY, customer_id INT NOT NULL, total DECIMAL(10,2) NOT NULL,
           status VARCHAR(20) NOT NULL, FOREIGN KEY (customer_id) REFERENCES customers(id)) ENGINE=InnoDB;
         INSERT INTO customers VALUES (1, 'Ada'), (2, 'Grace'), (3, 'Linus');
         INSERT INTO orders VALUES (1, 1, 10.50, 'paid'), (2, 1, 20.00, 'open'), (3, 2, 5.25, 'paid');`,
      );
      s = await startTestServer();
      const base = {
        name: `${type} flow`,
        type,
        host: m.host,
        port: m.port,
        database: DB,
        username: m.user,
        password: m.password,
      };
      db = {
        body: base,
        password: m.password,
        failing: {
          body: { ...base, name: 'wrong password', password: 'definitely-Wrong-pw-456' },
          stage: 'AUTH',
          password: 'definitely-Wrong-pw-456',
        },
        admin: (sql) => adminRun(DB, sql),
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
}
