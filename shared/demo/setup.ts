import { existsSync, mkdirSync, renameSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { AuthContext } from '../auth/context';
import { createConnection } from '../connections/connections';
import { connectionStore } from '../connections/store';
import { testConnection } from '../connections/test-connection';
import { orgSqliteDir } from '../databases/sqlite-source';
import { db } from '../platform/db/store';
import { nowIso } from '../platform/ids';
import { createDemoDashboard, DEMO_DASHBOARD_TITLE } from './dashboard';
import { ensureDemoDatabase } from './generate';

export const DEMO_CONNECTION_NAME = 'Demo SaaS (SQLite)';
export const DEMO_FILE = 'demo.sqlite';

/**
 * Demo data for a local install: the SQLite demo database in the data directory, registered as a
 * connection of the bootstrap organization and tested (so its schema is cached), and a demo dashboard over it.
 *
 * Progress is kept in `LOCAL / DEMO` ({status: pending | done, connectionId}), so an interrupted setup
 * is finished on the next start and a finished one is never repeated (a user who deletes the demo
 * connection does not get it back).
 */
export async function setUpDemo(input: {
  dataDir: string;
  orgId: string;
  adminUserId: string;
  firstStart: boolean;
  log: (line: string) => void;
}): Promise<{ connectionId: string; dashboardId: string } | undefined> {
  const marker = await db.get<{ status: 'pending' | 'done'; connectionId?: string; dashboardId?: string }>(
    'LOCAL',
    'DEMO',
  );
  if (marker?.status === 'done') {
    if (marker.connectionId) {
      await moveIntoOrgFolder(input, marker.connectionId);
      // Installs from before the demo dashboard existed get it once, while the demo connection is there.
      if (!marker.dashboardId && (await connectionStore.get(input.orgId, marker.connectionId)))
        await addDemoDashboard(input, marker.connectionId);
    }
    return undefined;
  }
  if (!marker && !input.firstStart) return undefined;
  if (!marker) await db.put({ pk: 'LOCAL', sk: 'DEMO', status: 'pending', startedAt: nowIso() });

  // The demo database lives in the organization's SQLite folder, like any file a user brings.
  const dir = orgSqliteDir(input.orgId);
  mkdirSync(dir, { recursive: true });
  const file = join(dir, DEMO_FILE);
  if (ensureDemoDatabase(file)) input.log(`demo: created ${file}`);
  const ctx = adminContext(input);
  let connectionId = marker?.connectionId;
  if (!connectionId || !(await connectionStore.get(input.orgId, connectionId))) {
    const conn = await createConnection(ctx, {
      name: DEMO_CONNECTION_NAME,
      type: 'SQLITE',
      database: DEMO_FILE,
      readOnly: true,
    });
    connectionId = conn.id;
    await db.patch('LOCAL', 'DEMO', { connectionId });
  }
  const result = await testConnection(ctx, connectionId);
  if (result.schemaError) throw new Error(`demo: the schema could not be cached: ${result.schemaError}`);
  const dashboardId = marker?.dashboardId ?? (await addDemoDashboard(input, connectionId));
  await db.patch('LOCAL', 'DEMO', { status: 'done', doneAt: nowIso() });
  input.log(`demo: connection "${DEMO_CONNECTION_NAME}" (${connectionId}) is ready`);
  return { connectionId, dashboardId };
}

/** The demo dashboard (MRR by plan, signups by month, churn) over the demo connection, recorded in the marker. */
async function addDemoDashboard(
  input: { orgId: string; adminUserId: string; log: (line: string) => void },
  connectionId: string,
) {
  const dashboardId = await createDemoDashboard(adminContext(input), connectionId);
  await db.patch('LOCAL', 'DEMO', { dashboardId });
  input.log(`demo: dashboard "${DEMO_DASHBOARD_TITLE}" (${dashboardId}) is ready`);
  return dashboardId;
}

const adminContext = (input: { orgId: string; adminUserId: string }): AuthContext => ({
  orgId: input.orgId,
  userId: input.adminUserId,
  keyId: 'local-startup',
  role: 'admin',
  scopes: ['*'],
  connectionIds: [],
});

/**
 * Installs from before SQLite sources were confined to the organization's folder registered the demo as
 * the absolute path `<dataDir>/demo.sqlite`: move that file into the folder and point the connection at it.
 */
async function moveIntoOrgFolder(
  input: { dataDir: string; orgId: string; log: (line: string) => void },
  id: string,
) {
  const old = resolve(input.dataDir, DEMO_FILE);
  const rec = await connectionStore.get(input.orgId, id);
  if (rec?.type !== 'SQLITE' || !rec.database.startsWith('/') || resolve(rec.database) !== old) return;
  const dir = orgSqliteDir(input.orgId);
  mkdirSync(dir, { recursive: true });
  const target = join(dir, DEMO_FILE);
  if (!existsSync(target) && existsSync(old)) renameSync(old, target);
  await connectionStore.patch(input.orgId, id, { database: DEMO_FILE, updatedAt: nowIso() });
  input.log(`demo: moved ${old} to ${target}`);
}

/** LOUPE_DEMO_DATA: true/false; by default on, except under the test runner (tests opt in). */
export function demoEnabled(env: NodeJS.ProcessEnv = process.env): boolean {
  const v = env.LOUPE_DEMO_DATA?.trim().toLowerCase();
  if (v === undefined || v === '') return !env.VITEST;
  if (['1', 'true', 'yes', 'on'].includes(v)) return true;
  if (['0', 'false', 'no', 'off'].includes(v)) return false;
  throw new Error('Invalid configuration: LOUPE_DEMO_DATA must be true or false.');
}
