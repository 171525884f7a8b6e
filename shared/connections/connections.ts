import { type AuthContext, assertConnectionVisible, isAdmin } from '../auth/context';
import { closeDriver } from '../databases/drivers';
import type { DbType } from '../databases/drivers/types';
import { realSqlitePath, SqliteSourceRefused, sqliteSource } from '../databases/sqlite-source';
import type { isOtherDenied, pgDenied } from '../guard/functions';
import { pageOf } from '../http/envelope';
import type { PageQuery } from '../http/schemas';
import { notFound, validationError } from '../platform/errors';
import { newId, nowIso } from '../platform/ids';
import type { ConnectionCreate, ConnectionUpdate } from './api';
import { dropCachedSchema } from './schema-store';
import {
  type ConnectionRecord,
  connectionStore,
  connPk,
  deleteKeys,
  healthChecked,
  keysOf,
  NO_INDEX_KEYS,
  orgPk,
} from './store';
import { encryptPassword } from './target';

/** The sanitized connection: never the password or its ciphertext. */
export function connectionView(r: ConnectionRecord) {
  return {
    id: r.id,
    name: r.name,
    type: r.type,
    host: r.host,
    port: r.port,
    database: r.database,
    username: r.username,
    sslEnabled: r.sslEnabled,
    readOnly: r.readOnly,
    allowedFunctions: r.allowedFunctions ?? [],
    isActive: r.isActive,
    lastTestedAt: r.lastTestedAt,
    lastError: r.lastError,
    lastErrorDiagnosis: r.lastErrorDiagnosis,
    schemaUpdatedAt: r.schemaUpdatedAt,
    createdAt: r.createdAt,
    updatedAt: r.updatedAt,
  };
}
export type ConnectionView = ReturnType<typeof connectionView>;

/** The connection if it exists in the caller's organization and is visible to the caller; 404 otherwise. */
export async function loadConnection(ctx: AuthContext, id: string): Promise<ConnectionRecord> {
  assertConnectionVisible(ctx, id);
  const rec = await connectionStore.get(ctx.orgId, id);
  if (!rec) throw notFound('Connection');
  return rec;
}

export async function listConnections(ctx: AuthContext, q: PageQuery) {
  const all = await connectionStore.list(ctx.orgId);
  const visible = isAdmin(ctx) ? all : all.filter((c) => ctx.connectionIds.includes(c.id));
  return pageOf(visible.map(connectionView), q);
}

type Issue = { path: string; message: string; code: string };
const fail = (issues: Issue[]) => validationError('Request validation failed.', { issues });

interface Settings {
  type: DbType;
  host: string;
  port: number | null;
  database: string;
  username: string;
  sslEnabled: boolean;
  hasPassword: boolean;
  allowedFunctions: string[];
}

/**
 * Rules that depend on the database type, checked on the complete (created or merged) settings.
 * `denied` is the guard's lists of refused functions (passed in: the guard's lists load with the first
 * create or update, not at a cold start).
 */
export function settingsIssues(
  s: Settings,
  denied: { isOtherDenied: typeof isOtherDenied; pgDenied: typeof pgDenied },
): Issue[] {
  const issues: Issue[] = [];
  const bad = (path: string, message: string) =>
    issues.push({ path: `body.${path}`, message, code: 'custom' });
  if (s.allowedFunctions.length > 0 && !['POSTGRES', 'MYSQL', 'MARIADB', 'MSSQL'].includes(s.type))
    bad('allowedFunctions', `${s.type} connections have no stored functions to allow`);
  s.allowedFunctions.forEach((f, i) => {
    // A quoted part ("Mark") names exactly that function; pgDenied folds case itself.
    const name = (f.split('.').pop() ?? f).replace(/^"|"$/g, '').replace(/""/g, '"');
    if (
      s.type === 'POSTGRES'
        ? denied.pgDenied(name) !== undefined
        : s.type !== 'SQLITE' &&
          s.type !== 'MONGODB' &&
          denied.isOtherDenied(s.type === 'MSSQL' ? 'mssql' : 'mysql', name)
    )
      bad(
        `allowedFunctions.${i}`,
        `${f} sleeps, locks, reads files or runs text the guard cannot verify; it cannot be allowed`,
      );
  });
  if (s.type === 'SQLITE') {
    if (!s.database)
      bad(
        'database',
        "SQLITE needs database: a file path relative to the organization's SQLite folder, or s3://<bucket>/<orgId>/<key>",
      );
    if (s.host) bad('host', 'SQLITE connections take no host');
    if (s.port !== null) bad('port', 'SQLITE connections take no port');
    if (s.hasPassword) bad('password', 'SQLITE connections take no password');
    if (s.sslEnabled) bad('sslEnabled', 'SQLITE connections do not use TLS');
    return issues;
  }
  if (!s.host) bad('host', `${s.type} needs host`);
  if (!s.database) bad('database', `${s.type} needs database`);
  if (s.type !== 'MONGODB' && !s.username) bad('username', `${s.type} needs username`);
  return issues;
}

/**
 * Without repeats, unquoted parts lower-cased (the servers fold unquoted names); a double-quoted part
 * ("Mark", PostgreSQL) is kept exactly: it names a different function from mark.
 */
const uniqueNames = (names: string[] | undefined) => [
  ...new Set(
    (names ?? []).map((n) =>
      n.replace(/"(?:[^"]|"")*"|[^"]+/g, (m) => (m.startsWith('"') ? m : m.toLowerCase())),
    ),
  ),
];

/**
 * A SQLite source outside the organization's area is 400 at save time: checked lexically, then a local
 * file's symlinks are resolved (a link leading outside, or dangling, is refused with the text opening
 * gives; a missing file is not a save problem).
 */
async function sqliteSourceIssues(orgId: string, s: Settings): Promise<Issue[]> {
  if (s.type !== 'SQLITE' || !s.database) return [];
  try {
    const source = sqliteSource(orgId, s.database);
    if (source.kind === 'file') await realSqlitePath(orgId, source.path);
    return [];
  } catch (e) {
    if (!(e instanceof SqliteSourceRefused)) return [];
    return [{ path: 'body.database', message: e.message, code: 'custom' }];
  }
}

/** Resolves an alias pair (password/encryptedPassword, sslEnabled/ssl); giving both with different values is 400. */
function alias<T>(
  primary: T | undefined,
  other: T | undefined,
  names: [string, string],
  issues: Issue[],
): T | undefined {
  if (primary !== undefined && other !== undefined && primary !== other)
    issues.push({
      path: `body.${names[1]}`,
      message: `${names[1]} is an alias of ${names[0]}; give one of them`,
      code: 'custom',
    });
  return primary !== undefined ? primary : other;
}

export async function createConnection(ctx: AuthContext, body: ConnectionCreate): Promise<ConnectionView> {
  const issues: Issue[] = [];
  const password =
    alias(body.password, body.encryptedPassword, ['password', 'encryptedPassword'], issues) || null;
  const sslEnabled = alias(body.sslEnabled, body.ssl, ['sslEnabled', 'ssl'], issues) ?? false;
  const settings: Settings = {
    type: body.type,
    host: body.host ?? '',
    port: body.port ?? null,
    database: body.database ?? '',
    username: body.username ?? '',
    sslEnabled,
    hasPassword: !!password,
    allowedFunctions: uniqueNames(body.allowedFunctions),
  };
  issues.push(...settingsIssues(settings, await import('../guard/functions')));
  if (!issues.length) issues.push(...(await sqliteSourceIssues(ctx.orgId, settings)));
  if (issues.length) throw fail(issues);
  const id = newId();
  const now = nowIso();
  const rec: ConnectionRecord = {
    id,
    orgId: ctx.orgId,
    name: body.name,
    type: settings.type,
    host: settings.host,
    port: settings.port,
    database: settings.database,
    username: settings.username,
    passwordCipher: password ? await encryptPassword(ctx.orgId, id, password) : null,
    sslEnabled,
    readOnly: body.readOnly,
    ...(settings.allowedFunctions.length ? { allowedFunctions: settings.allowedFunctions } : {}),
    isActive: true,
    deactivatedBy: null,
    lastTestedAt: null,
    lastError: null,
    lastErrorDiagnosis: null,
    schemaUpdatedAt: null,
    healthFailures: 0,
    lastHealthSlot: null,
    version: 1,
    createdAt: now,
    updatedAt: now,
  };
  await connectionStore.create(rec);
  return connectionView(rec);
}

export async function updateConnection(
  ctx: AuthContext,
  id: string,
  body: ConnectionUpdate,
): Promise<ConnectionView> {
  for (let attempt = 0; ; attempt++) {
    const cur = await loadConnection(ctx, id);
    const issues: Issue[] = [];
    const password = alias(body.password, body.encryptedPassword, ['password', 'encryptedPassword'], issues);
    const ssl = alias(body.sslEnabled, body.ssl, ['sslEnabled', 'ssl'], issues);
    const next: Settings = {
      type: body.type ?? cur.type,
      host: body.host === undefined ? cur.host : (body.host ?? ''),
      port: body.port === undefined ? cur.port : body.port,
      database: body.database ?? cur.database,
      username: body.username === undefined ? cur.username : (body.username ?? ''),
      sslEnabled: ssl ?? cur.sslEnabled,
      hasPassword: password === undefined ? !!cur.passwordCipher : !!password,
      allowedFunctions:
        body.allowedFunctions === undefined
          ? (cur.allowedFunctions ?? [])
          : uniqueNames(body.allowedFunctions),
    };
    issues.push(...settingsIssues(next, await import('../guard/functions')));
    if (!issues.length) issues.push(...(await sqliteSourceIssues(ctx.orgId, next)));
    if (issues.length) throw fail(issues);

    const identityChanged =
      next.type !== cur.type ||
      next.host !== cur.host ||
      next.port !== cur.port ||
      next.database !== cur.database;
    const connectingChanged =
      identityChanged ||
      next.username !== cur.username ||
      next.sslEnabled !== cur.sslEnabled ||
      password !== undefined;
    const { hasPassword: _hasPassword, allowedFunctions: _allowed, ...settings } = next;
    const changes: Partial<ConnectionRecord> & Record<string, unknown> = { ...settings, updatedAt: nowIso() };
    if (body.name !== undefined) changes.name = body.name;
    if (body.readOnly !== undefined) changes.readOnly = body.readOnly;
    if (body.allowedFunctions !== undefined) changes.allowedFunctions = next.allowedFunctions;
    if (password !== undefined)
      changes.passwordCipher = password ? await encryptPassword(ctx.orgId, id, password) : null;
    if (connectingChanged) changes.version = cur.version + 1;
    if (identityChanged) changes.schemaUpdatedAt = null;
    let isActive = cur.isActive;
    let deactivatedBy = cur.deactivatedBy;
    if (body.isActive === true) {
      isActive = true;
      deactivatedBy = null;
      changes.healthFailures = 0;
    } else if (body.isActive === false) {
      isActive = false;
      deactivatedBy = 'user';
    }
    Object.assign(changes, { isActive, deactivatedBy }, NO_INDEX_KEYS);
    if (healthChecked(isActive, deactivatedBy)) await connectionStore.ensureHealthEntry(ctx.orgId, id);

    const updated = await connectionStore.patch(ctx.orgId, id, changes, { expectVersion: cur.version });
    if (updated) {
      if (identityChanged) await dropCachedSchema(ctx.orgId, id);
      return connectionView(updated);
    }
    // The connection changed (or went away) between read and write: read again.
    if (attempt >= 4) throw notFound('Connection');
  }
}

/**
 * Deletes the connection, then its annotations, query history and cached schema. The connection is hidden
 * first, so a cascade interrupted half way is finished by repeating the DELETE.
 */
export async function deleteConnection(ctx: AuthContext, id: string) {
  assertConnectionVisible(ctx, id);
  const rec = await connectionStore.get(ctx.orgId, id, { includeDeleting: true });
  if (!rec) throw notFound('Connection');
  if (!rec.deletingAt) await connectionStore.markDeleting(ctx.orgId, id, nowIso());
  await deleteKeys(await keysOf(connPk(ctx.orgId, id)));
  await deleteKeys(await keysOf(orgPk(ctx.orgId), `CONNSCHEMA#${id}`));
  await connectionStore.remove(ctx.orgId, id);
  await closeDriver(id);
  return { deleted: true as const };
}
