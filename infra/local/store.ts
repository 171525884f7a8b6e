import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { CreateTableCommand, DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import dynalite from 'dynalite';
import { createTableInput } from '../../shared/platform/db/table';

export interface LocalStore {
  endpoint: string;
  close(): Promise<void>;
}

const portFile = (dataDir: string) => join(dataDir, 'dynamodb.endpoint');

/**
 * Starts dynalite (DynamoDB on LevelDB) with its files under `<dataDir>/dynamodb`, and creates the
 * table from the same definition the CDK stack uses. The endpoint is written to
 * `<dataDir>/dynamodb.endpoint` so that the operator tool can use a running server's store.
 */
export async function startLocalStore(dataDir: string, tableName: string, port = 0): Promise<LocalStore> {
  mkdirSync(join(dataDir, 'dynamodb'), { recursive: true });
  const server: Server = dynalite({
    path: join(dataDir, 'dynamodb'),
    createTableMs: 0,
    deleteTableMs: 0,
    updateTableMs: 0,
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  await ensureTable(endpoint, tableName);
  writeFileSync(portFile(dataDir), endpoint, { mode: 0o600 });
  return {
    endpoint,
    close: () =>
      new Promise<void>((resolve) => {
        try {
          writeFileSync(portFile(dataDir), '');
        } catch {}
        server.close(() => resolve());
        server.closeAllConnections?.();
      }),
  };
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
