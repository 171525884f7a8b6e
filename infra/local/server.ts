import { startLocal } from './app';

/** `npm start`: serves the API on http://localhost:3000/v1 (PORT overrides) with the embedded defaults. */
const port = Number(process.env.PORT ?? 3000);
const app = await startLocal({ port });
console.log(`Loupe is serving ${app.url} (data in ${app.dataDir})`);
console.log(`Web console: ${app.url.replace(/\/v1$/, '/')}`);
if (app.createdKey && !process.env.LOUPE_ADMIN_KEY) {
  console.log(`\nAdmin API key (shown once; also saved to ${app.dataDir}/admin-key):\n  ${app.createdKey}\n`);
}

let stopping = false;
const stop = async (signal: string) => {
  if (stopping) return;
  stopping = true;
  console.log(`${signal}: stopping`);
  await app.stop();
  process.exit(0);
};
process.on('SIGINT', () => void stop('SIGINT'));
process.on('SIGTERM', () => void stop('SIGTERM'));
