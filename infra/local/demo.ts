import { demoEnabled, setUpDemo } from '../../shared/demo/setup';
import { startupTasks } from './startup';

/**
 * Local demo data (shared/demo): on the first start, a SQLite demo database registered as the connection
 * "Demo SaaS (SQLite)". A failure is logged and retried on the next start; it never stops the server.
 * LOUPE_DEMO_DATA=false turns it off.
 */
startupTasks.push(async (env) => {
  if (!demoEnabled()) return undefined;
  try {
    await setUpDemo(env);
  } catch (e) {
    env.log(`demo: setup failed, will retry on the next start: ${(e as Error)?.message ?? e}`);
  }
  return undefined;
});
