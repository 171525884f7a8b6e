import { type ChildProcess, fork } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CreateTableCommand, DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createTableInput } from '../../shared/platform/db/table';
import { openDirectStore, type StoreCall } from './store-client';

export interface LocalStore {
  endpoint: string;
  /** The store's own process, when it runs in one (startStoreProcess). */
  pid?: number;
  /** Direct calls into the store, when it runs in this process (store-client.ts). */
  call?: StoreCall;
  close(): Promise<void>;
}

const portFile = (dataDir: string) => join(dataDir, 'dynamodb.endpoint');

/**
 * Starts dynalite's store (items in memory, every write in a log file first: durable-level.cjs) with its files under `<dataDir>/dynamodb` in this
 * process, and creates the table from the same definition the CDK stack uses. `call` executes commands
 * directly (store-client.ts, no HTTP); the same store is also served on an HTTP endpoint, written to
 * `<dataDir>/dynamodb.endpoint` so that the operator tool can use a running server's store.
 */
export async function startLocalStore(dataDir: string, tableName: string, port = 0): Promise<LocalStore> {
  const store = await openDirectStore(dataDir, port);
  try {
    await ensureTable(store.endpoint, tableName);
    writeFileSync(portFile(dataDir), store.endpoint, { mode: 0o600 });
  } catch (e) {
    await store.close();
    throw e;
  }
  return {
    endpoint: store.endpoint,
    call: store.call,
    close: async () => {
      try {
        writeFileSync(portFile(dataDir), '');
      } catch {}
      await store.close();
    },
  };
}

/**
 * Starts the same store (dynalite on `<dataDir>/dynamodb`, the table, the endpoint file) in a child
 * process, as DynamoDB is a service of its own in AWS: its work no longer competes with the service's
 * thread. The child stops with close(), exits when this process dies (its IPC channel closes), and
 * ignores the terminal's SIGINT (the parent stops it). `onCrash` is called if it exits on its own.
 */
export async function startStoreProcess(
  dataDir: string,
  tableName: string,
  opts: { port?: number; onCrash?: (reason: string) => void } = {},
): Promise<LocalStore> {
  const child: ChildProcess = fork(
    new URL('./store-process.mjs', import.meta.url).pathname,
    [dataDir, String(opts.port ?? 0)],
    { execArgv: [], stdio: ['ignore', 'inherit', 'inherit', 'ipc'], serialization: 'json' },
  );
  let closing = false;
  const exited = new Promise<string>((resolve) =>
    child.once('exit', (code, signal) => resolve(signal ? `signal ${signal}` : `exit code ${code}`)),
  );
  let port: number;
  try {
    port = await new Promise<number>((resolve, reject) => {
      child.once('message', (m) => {
        const answer = m as { port?: number; error?: string };
        if (answer.error !== undefined) reject(new Error(answer.error));
        else resolve(answer.port as number);
      });
      child.once('error', reject);
      exited.then((why) => reject(new Error(`The local store process failed to start (${why}).`)));
    });
  } catch (e) {
    child.kill('SIGKILL');
    throw e;
  }
  void exited.then((why) => {
    if (!closing) opts.onCrash?.(`The local store process (pid ${child.pid}) stopped unexpectedly: ${why}.`);
  });
  const endpoint = `http://127.0.0.1:${port}`;
  const close = async () => {
    if (closing) return exited.then(() => {});
    closing = true;
    try {
      writeFileSync(portFile(dataDir), '');
    } catch {}
    if (child.exitCode === null && child.signalCode === null) {
      if (child.connected) child.send('stop');
      else child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }
  };
  try {
    await ensureTable(endpoint, tableName);
    writeFileSync(portFile(dataDir), endpoint, { mode: 0o600 });
  } catch (e) {
    await close();
    throw e;
  }
  return { endpoint, pid: child.pid, close };
}

export async function ensureTable(endpoint: string, tableName: string): Promise<void> {
  const client = new DynamoDBClient({
    endpoint,
    region: 'local',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  try {
    try {
      await client.send(new DescribeTableCommand({ TableName: tableName }));
    } catch (e) {
      if ((e as { name?: string }).name !== 'ResourceNotFoundException') throw e;
      await client.send(new CreateTableCommand(createTableInput(tableName)));
    }
    // dynalite creates tables asynchronously: wait until the table and its index are ACTIVE.
    for (let i = 0; i < 200; i++) {
      const { Table } = await client.send(new DescribeTableCommand({ TableName: tableName }));
      const indexesReady = (Table?.GlobalSecondaryIndexes ?? []).every((ix) => ix.IndexStatus === 'ACTIVE');
      if (Table?.TableStatus === 'ACTIVE' && indexesReady) return;
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error(`Table ${tableName} did not become ACTIVE`);
  } finally {
    client.destroy();
  }
}

/** The endpoint of a running local server's store, if one answers. */
export async function runningStoreEndpoint(dataDir: string): Promise<string | undefined> {
  let endpoint: string;
  try {
    endpoint = readFileSync(portFile(dataDir), 'utf8').trim();
  } catch {
    return undefined;
  }
  if (!endpoint) return undefined;
  try {
    const res = await fetch(endpoint, { method: 'POST', signal: AbortSignal.timeout(1000) });
    return res.status > 0 ? endpoint : undefined;
  } catch {
    return undefined;
  }
}
