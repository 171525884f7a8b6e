// The local store's own process (started by startStoreProcess in store.ts): dynalite on
// `<dataDir>/dynamodb`, listening on 127.0.0.1. It reports its port to the parent over IPC, stops
// (closing the store's files) when the parent sends 'stop', and exits when the parent goes away.
import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

// In this order: the storage before dynalite/db loads (durable-level.cjs), then dynalite's fixes.
const require = createRequire(import.meta.url);
const { withDurableStorage } = require('./durable-level.cjs');
require('./dynalite-iterators.cjs');
require('./dynalite-expressions.cjs');
const dynalite = require('dynalite');

const [dataDir, portArg] = process.argv.slice(2);
if (!dataDir || !process.send) {
  process.stderr.write('store-process.mjs is started by the local runtime (startStoreProcess)\n');
  process.exit(2);
}
mkdirSync(join(dataDir, 'dynamodb'), { recursive: true });
const storage = {};
const server = withDurableStorage(
  () =>
    dynalite({
      path: join(dataDir, 'dynamodb'),
      createTableMs: 0,
      deleteTableMs: 0,
      updateTableMs: 0,
    }),
  storage,
);
// Opened before serving: a store in use by another process (its lock) or damaged fails the start with its
// reason, sent to the parent, instead of failing every request.
try {
  await storage.db.open();
} catch (e) {
  const reason = e?.cause?.message ?? e?.message ?? String(e);
  process.send({ error: reason }, () => process.exit(1));
  setTimeout(() => process.exit(1), 2000).unref();
  await new Promise(() => {});
}

let stopping = false;
function stop(code) {
  if (stopping) return;
  stopping = true;
  server.close(() => process.exit(code));
  server.closeAllConnections?.();
  setTimeout(() => process.exit(code), 5000).unref();
}

// The parent's signals are its own to handle (it stops this process); a parent that dies disconnects.
process.on('SIGINT', () => {});
process.on('disconnect', () => stop(0));
process.on('message', (m) => {
  if (m === 'stop') stop(0);
});
server.once('error', (e) => {
  process.stderr.write(`local store: ${e.message}\n`);
  process.exit(1);
});
server.listen(Number(portArg ?? 0), '127.0.0.1', () => {
  process.send({ port: server.address().port });
});
