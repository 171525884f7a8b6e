import { ensureConsoleBuilt } from '../support/browser';
import { startPostgres } from '../support/databases';
import { dbInfo, keepExitCode } from '../support/global-setup';

/** The variable through which the workers learn how to reach the run's PostgreSQL (JSON of a DbInfo). */
export const POSTGRES_ENV = 'LOUPE_TEST_POSTGRES';

/**
 * Playwright's global setup for the console specs: builds the console when console/dist is missing and
 * starts one embedded PostgreSQL for the run (the browser specs need no MariaDB). Workers are started
 * after this and inherit the environment; the returned function stops PostgreSQL after the run.
 */
export default async function setup(): Promise<() => Promise<void>> {
  keepExitCode();
  ensureConsoleBuilt();
  const pg = await startPostgres();
  process.env[POSTGRES_ENV] = JSON.stringify(dbInfo(pg));
  return () => pg.stop();
}
