import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { type HttpGroup, httpGroups } from '../shared/http/groups';
import { type WorkerDef, workers } from '../shared/platform/workers';

export type FunctionKind = 'http' | 'workers';

/** One deployable function: an HTTP endpoint group or a worker, with its source entry. */
export type FunctionEntry =
  | { kind: 'http'; name: string; entry: string; group: HttpGroup }
  | { kind: 'workers'; name: string; entry: string; worker: WorkerDef };

/** Project root (this file lives in `<root>/infra`). */
export const ROOT = join(import.meta.dirname, '..');

const NAME = /^[a-z][a-z0-9-]*$/;

/**
 * Every function the manifests declare (`shared/http/groups.ts`, `shared/platform/workers.ts`), in
 * manifest order. Fails with a clear message when a name is malformed, repeated, or its handler file
 * is missing, so a manifest mistake stops `cdk synth`/`npm run build` instead of deploying a gap.
 */
export function functionEntries(root = ROOT): FunctionEntry[] {
  const out: FunctionEntry[] = [
    ...httpGroups.map((group) => ({
      kind: 'http' as const,
      name: group.name,
      entry: join('functions', 'http', `${group.name}.ts`),
      group,
    })),
    ...workers.map((worker) => ({
      kind: 'workers' as const,
      name: worker.name,
      entry: join('functions', 'workers', `${worker.name}.ts`),
      worker,
    })),
  ];
  const seen = new Set<string>();
  for (const f of out) {
    if (!NAME.test(f.name))
      throw new Error(`Function name "${f.name}" must be lowercase letters, digits and dashes.`);
    const key = `${f.kind}/${f.name}`;
    if (seen.has(key)) throw new Error(`Function ${key} is declared twice in the manifest.`);
    seen.add(key);
    if (!existsSync(join(root, f.entry)))
      throw new Error(`Function ${key}: handler file ${f.entry} is missing.`);
  }
  return out;
}

/** Where a function's bundle lives under a bundle root: `<root>/<kind>/<name>/index.mjs`. */
export const bundleDirOf = (bundleRoot: string, f: Pick<FunctionEntry, 'kind' | 'name'>) =>
  join(bundleRoot, f.kind, f.name);
