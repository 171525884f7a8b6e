import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { type LocalStore, startLocalStore } from '../../infra/local/store';
import { resetConfig } from '../../shared/platform/config';
import { resetDocumentClient } from '../../shared/platform/db/client';

/** A dynalite store in a temporary directory, with the process environment pointed at it. */
export interface TestStore {
  /** Starts dynalite on the directory (again, after `close()`: same files) and points the config at it. */
  open(): Promise<void>;
  /** Stops dynalite; the files stay, so `open()` proves what survives a restart. */
  close(): Promise<void>;
}

/**
 * For unit tests of code that talks to DynamoDB: a dynalite store in its own temporary directory and
 * table, opened before the file's tests and closed and removed after them.
 */
export function useTestStore(name: string): TestStore {
  const table = `loupe-${name}-test`;
  const dir = mkdtempSync(join(tmpdir(), `loupe-${name}-`));
  let store: LocalStore | undefined;
  const ts: TestStore = {
    async open() {
      store = await startLocalStore(dir, table);
      process.env.LOUPE_RUNTIME = 'local';
      process.env.LOUPE_DYNAMODB_ENDPOINT = store.endpoint;
      process.env.LOUPE_TABLE_NAME = table;
      resetConfig();
      resetDocumentClient();
    },
    async close() {
      resetDocumentClient();
      await store?.close();
      store = undefined;
    },
  };
  beforeAll(() => ts.open());
  afterAll(async () => {
    await ts.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return ts;
}
