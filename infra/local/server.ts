import { startLocal } from './app';

/** `npm start`: serves the API on http://localhost:3000/v1 (PORT overrides) with the embedded defaults. */
const port = Number(process.env.PORT ?? 3000);
const app = await startLocal({ port });
console.log(`Loupe is serving ${app.url} (data in ${app.dataDir})`);
console.log(`Web console: ${app.url.replace(/\/v1$/, '/')}`);
if (app.createdKey && !process.env.LOUPE_ADMIN_KEY) {
  console.log(`\nAdmin API key (shown once; also saved to ${app.dataDir}/admin-key):\n  ${app.createdKey}\n`);
}

// A stop (SIGTERM, or Ctrl-C) is graceful: the server stops accepting, the requests under way finish
// (up to LOUPE_DRAIN_MS, 25 s), the workers finish their invocations (up to 10 s; messages still held are
// given back for the next start), then the drivers and the store close. A second signal exits at once.
let stopping = false;
const stop = async (signal: string) => {
  if (stopping) {
    console.log(`${signal}: exiting now`);
    process.exit(1);
  }
  stopping = true;
  console.log(`${signal}: stopping (requests under way finish first)`);
  try {
    await app.stop();
  } catch (e) {
    console.error(`stopping failed: ${(e as Error)?.message ?? e}`);
    process.exit(1);
  }
  console.log('stopped');
  process.exit(0);
};
process.on('SIGINT', () => void stop('SIGINT'));
process.on('SIGTERM', () => void stop('SIGTERM'));
