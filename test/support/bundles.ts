import { cpSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { inject } from 'vitest';
import { type BundleResult, bundleFunctions } from '../../infra/bundling';
import { functionEntries } from '../../infra/functions';
import { sleep } from './wait';

/**
 * Every function of the manifest bundled ONCE per test run, for the test files that need the bundles
 * (the stack synth, the deployment settings, the cold-start bench), which vitest runs in separate
 * processes: the first to ask bundles into the run's folder (test/support/global-setup.ts provides it,
 * inside the project so that bundles resolve the externally provided @aws-sdk/* from node_modules) while
 * the others wait for its marker. Each caller gets its own copy in `into` (the stack writes files into
 * bundle folders), with the results pointing there. Bundling is the heaviest CPU work of the suite;
 * doing it once instead of three times shortens `npm test` and keeps those files within their timeouts
 * on a loaded machine.
 */
export async function sharedBundles(into: string): Promise<BundleResult[]> {
  const dir = inject('bundleDir');
  const build = join(dir, 'build');
  const done = join(dir, 'results.json');
  const failed = join(dir, 'failed.txt');
  let mine = false;
  try {
    mkdirSync(join(dir, 'lock'));
    mine = true;
  } catch {
    // another test file is bundling (or has bundled)
  }
  if (mine) {
    try {
      const results = await bundleFunctions(functionEntries(), build);
      writeFileSync(`${done}.part`, JSON.stringify(results));
      renameSync(`${done}.part`, done);
    } catch (e) {
      writeFileSync(failed, String((e as Error)?.stack ?? e));
      throw e;
    }
  }
  // Waits for the bundling process as long as the caller's hook allows: no timing of its own.
  while (!existsSync(done)) {
    if (existsSync(failed))
      throw new Error(`Bundling failed in another test file:\n${readFileSync(failed, 'utf8')}`);
    await sleep(200);
  }
  cpSync(build, into, { recursive: true });
  const results = JSON.parse(readFileSync(done, 'utf8')) as BundleResult[];
  return results.map((r) => ({ ...r, dir: r.dir.replace(build, into) }));
}
