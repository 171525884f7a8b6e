/**
 * Where a SQLite connection may read from: only its own organization's area.
 *
 * - Locally: files under `<LOUPE_SQLITE_ROOT>/<orgId>/` (default root `<LOUPE_DATA_DIR>/sqlite`). The
 *   connection's `database` is a path relative to that folder (`shop.db`, `team/sales.db`); an absolute
 *   path is accepted only when it points inside it. Symlinks and `..` are resolved (realpath) before the
 *   check, so a link inside the folder that leads out of it is refused too.
 * - Deployed: `s3://<LOUPE_SQLITE_BUCKET>/<orgId>/<key>` objects only; a relative `database` means
 *   `s3://<bucket>/<orgId>/<database>`. Local paths are refused.
 *
 * A refused source always gets the same error, without touching the file system or S3 for it, so the
 * answer never tells whether something exists outside the organization's area.
 */
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import { config } from '../platform/config';

export type SqliteSource =
  | { kind: 'file'; path: string }
  | { kind: 's3'; bucket: string; key: string; url: string };

export class SqliteSourceRefused extends Error {
  readonly code = 'LOUPE_SQLITE_OUTSIDE_ROOT';
  constructor(readonly hint: string) {
    super(`This SQLite source is outside the organization's area. ${hint}`);
    this.name = 'SqliteSourceRefused';
  }
}

/** The absolute SQLite root folder of this process. */
export function sqliteRoot(): string {
  const c = config();
  return resolve(c.LOUPE_SQLITE_ROOT ?? join(c.LOUPE_DATA_DIR, 'sqlite'));
}

const ORG_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** The organization's own folder (not created here). */
export function orgSqliteDir(orgId: string): string {
  if (!ORG_ID.test(orgId)) throw new SqliteSourceRefused('The organization id is not valid.');
  return join(sqliteRoot(), orgId);
}

const where = (orgId: string) => {
  const c = config();
  if (c.runtime === 'aws')
    return c.LOUPE_SQLITE_BUCKET
      ? `Use a path relative to the organization's folder, or s3://${c.LOUPE_SQLITE_BUCKET}/${orgId}/<file>.`
      : 'SQLite sources are not configured for this deployment (LOUPE_SQLITE_BUCKET).';
  return `Use a path relative to the organization's SQLite folder (the operator places files in <LOUPE_SQLITE_ROOT>/${orgId}/)${c.LOUPE_SQLITE_BUCKET ? `, or s3://${c.LOUPE_SQLITE_BUCKET}/${orgId}/<file>` : ''}.`;
};

/** Key segments: no empty, `.` or `..` segment, no backslash or control characters. */
const cleanRelative = (p: string) =>
  p.length > 0 &&
  p.length <= 1024 &&
  !/[\\\u0000-\u001f]/.test(p) &&
  p.split('/').every((s) => s !== '' && s !== '.' && s !== '..');

/**
 * The source a `database` value names, checked lexically (no file system or network access). Throws
 * SqliteSourceRefused when it is outside the organization's area.
 */
export function sqliteSource(orgId: string | undefined, database: string): SqliteSource {
  if (!orgId) throw new SqliteSourceRefused('The connection has no organization.');
  const dir = orgSqliteDir(orgId);
  const c = config();
  if (database.startsWith('s3://')) {
    const m = /^s3:\/\/([^/]+)\/(.+)$/.exec(database);
    const bucket = m?.[1];
    const key = m?.[2] ?? '';
    if (!m || !c.LOUPE_SQLITE_BUCKET || bucket !== c.LOUPE_SQLITE_BUCKET || !key.startsWith(`${orgId}/`))
      throw new SqliteSourceRefused(where(orgId));
    if (!cleanRelative(key)) throw new SqliteSourceRefused(where(orgId));
    return { kind: 's3', bucket: bucket as string, key, url: database };
  }
  if (c.runtime === 'aws') {
    if (isAbsolute(database) || !cleanRelative(database) || !c.LOUPE_SQLITE_BUCKET)
      throw new SqliteSourceRefused(where(orgId));
    const key = `${orgId}/${database}`;
    return { kind: 's3', bucket: c.LOUPE_SQLITE_BUCKET, key, url: `s3://${c.LOUPE_SQLITE_BUCKET}/${key}` };
  }
  if (database.includes('\u0000')) throw new SqliteSourceRefused(where(orgId));
  const path = isAbsolute(database) ? resolve(database) : resolve(dir, database);
  if (!inside(dir, path)) throw new SqliteSourceRefused(where(orgId));
  return { kind: 'file', path };
}

const inside = (dir: string, path: string) => {
  const rel = relative(dir, path);
  return rel !== '' && !rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel);
};

/**
 * The real path of a local source after symlinks are resolved, still inside the organization's folder.
 * A missing file inside the folder gives SQLite's own "unable to open" error (errcode 14); anything that
 * resolves outside (also a dangling link) is refused with the same error as a path written outside.
 */
export async function realSqlitePath(orgId: string, path: string): Promise<string> {
  // Loaded here, not with the module: node:fs/promises costs a few milliseconds of every cold start of the
  // functions that only read connection records.
  const { lstat, realpath } = await import('node:fs/promises');
  const dir = orgSqliteDir(orgId);
  let realDir: string;
  try {
    realDir = await realpath(dir);
  } catch {
    throw cannotOpen(path);
  }
  let real: string;
  try {
    real = await realpath(path);
  } catch {
    // A dangling symlink says nothing about the path written; refuse it like an outside path.
    const link = await lstat(path).catch(() => undefined);
    if (link) throw new SqliteSourceRefused(where(orgId));
    throw cannotOpen(path);
  }
  if (!inside(realDir, real)) throw new SqliteSourceRefused(where(orgId));
  return real;
}

const cannotOpen = (_path: string) =>
  Object.assign(new Error('unable to open database file'), { errcode: 14, code: 'ERR_SQLITE_ERROR' });
