import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Earlier revisions the benchmarks compare with, by commit: the code as it was, read from git history
 * instead of kept as a copy in the tree.
 */
export const REVISIONS = {
  /** The read-only guard before issues 8 and 9: node-sql-parser for every dialect, a deny list of functions. */
  guardBefore: {
    commit: '145353e77db9139fe5192eac1afc11395391fc5b',
    path: 'shared/connections/sql-guard.ts',
  },
  /** The schema retrieval before issue 16: word overlap, 30 tables / 14,000 characters. */
  linkingBefore: {
    commit: 'ab44f17ed0617a6fc79b73b1b07de5d74f01115a',
    path: 'shared/chat/schema-context.ts',
  },
} as const;

const ROOT = join(import.meta.dirname, '..');

/**
 * The absolute path of `path` as it was at `commit`, for a dynamic import. The revision's shared/ is
 * extracted once with `git archive` under .tmp/revisions/<commit>/ (inside the clone, so its imports of
 * npm packages resolve from this node_modules). Undefined, with the reason, when the commit is not in
 * this clone's history (a shallow clone).
 */
export function revisionFile(revision: { commit: string; path: string }): { file?: string; reason?: string } {
  let sha: string;
  try {
    sha = execFileSync('git', ['rev-parse', '--verify', '--quiet', `${revision.commit}^{commit}`], {
      cwd: ROOT,
      encoding: 'utf8',
    }).trim();
  } catch {
    return { reason: `commit ${revision.commit} is not in this clone's history (shallow clone?)` };
  }
  const dir = join(ROOT, '.tmp', 'revisions', sha);
  if (!existsSync(dir)) {
    const partial = `${dir}.${process.pid}`;
    rmSync(partial, { recursive: true, force: true });
    mkdirSync(partial, { recursive: true });
    const tar = execFileSync('git', ['archive', '--format=tar', sha, 'shared'], {
      cwd: ROOT,
      maxBuffer: 256 * 1024 * 1024,
    });
    execFileSync('tar', ['-x', '-C', partial], { input: tar });
    if (!existsSync(dir)) renameSync(partial, dir);
    else rmSync(partial, { recursive: true, force: true });
  }
  return { file: join(dir, revision.path) };
}
