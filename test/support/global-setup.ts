import type { TestProject } from 'vitest/node';
import { type DbServer, startMariadb, startPostgres } from './databases';

export type DbInfo = Omit<DbServer, 'stop'>;

declare module 'vitest' {
  export interface ProvidedContext {
    postgres: DbInfo;
    /** Absent where no MariaDB server is installed (CI installs it). */
    mariadb: DbInfo | null;
  }
}

const info = (s: DbServer): DbInfo => {
  const { stop: _stop, ...rest } = s;
  return rest;
};

/** One PostgreSQL and one MariaDB for the whole run; each test file makes its own databases or tables. */
export default async function setup(project: TestProject) {
  const [pg, maria] = await Promise.all([startPostgres(), startMariadb()]);
  project.provide('postgres', info(pg));
  project.provide('mariadb', maria ? info(maria) : null);
  if (!maria && process.env.CI)
    throw new Error('MariaDB is required in CI (apt-get install mariadb-server).');
  return async () => {
    await Promise.all([pg.stop(), maria?.stop()]);
  };
}
