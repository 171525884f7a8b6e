import { afterAll, beforeAll, describe, inject } from 'vitest';
import { mariadbAdmin, mariadbConnection } from '../support/connections';
import { startTestServer, type TestServer } from '../support/server';
import { connectionFlow, FLOW_STATEMENTS, type FlowDb } from './connections-flow';

const maria = inject('mariadb');

/** The same MariaDB server, registered once as MYSQL and once as MARIADB, each with its own database. */
for (const type of ['MYSQL', 'MARIADB'] as const) {
  const DB = `conn_flow_${type.toLowerCase()}`;
  describe.skipIf(!maria)(`connections on MariaDB registered as ${type}`, () => {
    let s: TestServer;
    let db: FlowDb;
    beforeAll(async () => {
      const m = maria!;
      await mariadbAdmin(
        m,
        undefined,
        `DROP DATABASE IF EXISTS ${DB}; CREATE DATABASE ${DB}; GRANT ALL PRIVILEGES ON ${DB}.* TO '${m.user}'@'%';`,
      );
      await mariadbAdmin(
        m,
        DB,
        `CREATE TABLE customers (id INT PRIMARY KEY, name VARCHAR(100) NOT NULL) ENGINE=InnoDB;
         CREATE TABLE orders (id INT PRIMARY KEY, customer_id INT NOT NULL, total DECIMAL(10,2) NOT NULL,
           status VARCHAR(20) NOT NULL, FOREIGN KEY (customer_id) REFERENCES customers(id)) ENGINE=InnoDB;
         INSERT INTO customers VALUES (1, 'Ada'), (2, 'Grace'), (3, 'Linus');
         INSERT INTO orders VALUES (1, 1, 10.50, 'paid'), (2, 1, 20.00, 'open'), (3, 2, 5.25, 'paid');`,
      );
      s = await startTestServer();
      const base = mariadbConnection(m, { name: `${type} flow`, type, database: DB });
      db = {
        body: base,
        password: m.password,
        failing: {
          body: { ...base, name: 'wrong password', password: 'definitely-Wrong-pw-456' },
          stage: 'AUTH',
          password: 'definitely-Wrong-pw-456',
        },
        admin: (sql) => mariadbAdmin(m, DB, sql),
        ...FLOW_STATEMENTS,
      };
    });
    afterAll(async () => {
      await s?.stop();
    });

    connectionFlow(() => ({ s, db }));
  });
}
