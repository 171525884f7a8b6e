import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BundleResult, bundleFunctions } from '../infra/bundling';
import { type FunctionEntry, functionEntries, ROOT } from '../infra/functions';
import { type LocalStore, startLocalStore } from '../infra/local/store';
import { createOrganization } from '../shared/auth/bootstrap';
import { resetConfig } from '../shared/platform/config';
import { resetDocumentClient } from '../shared/platform/db/client';

/** What a benchmark module reports: one table, optional notes, and the figures over their target. */
export interface BenchReport {
  head: string[];
  rows: string[][];
  notes?: string[];
  /** One line per figure over target (also marked in the table). */
  overTarget: string[];
}

/**
 * A benchmark module. Add one by creating `bench/<name>.ts` exporting a `BenchModule` and listing it in
 * `benchModules` of bench/run.ts; modules run in that order and share one context (below).
 */
export interface BenchModule {
  name: string;
  description: string;
  run(ctx: BenchContext): Promise<BenchReport>;
}

export interface BenchOrg {
  orgId: string;
  userId: string;
  /** An admin key with every scope. */
  key: string;
}

/**
 * Shared, lazily created fixtures: a local store (dynalite on a temp dir) with the service's table,
 * an organization with an admin key, the function bundles (built once, with the stack's settings),
 * and the environment a fresh process needs to run a bundle against the store.
 */
export class BenchContext {
  readonly root = ROOT;
  readonly runs: number;
  readonly functions: FunctionEntry[] = functionEntries();
  private readonly dataDir = mkdtempSync(join(tmpdir(), 'loupe-bench-'));
  // Inside the project so bundles resolve the externally provided @aws-sdk/* from node_modules.
  private readonly bundleRoot = join(ROOT, '.tmp', `bench-${process.pid}`);
  private readonly masterKey = randomBytes(32).toString('base64');
  private store?: Promise<LocalStore>;
  private orgPromise?: Promise<BenchOrg>;
  private bundlePromise?: Promise<BundleResult[]>;

  /** `bundle`: how the bundles are built into a folder (default bundleFunctions; tests share one build). */
  constructor(opts: { runs: number; bundle?: (root: string) => Promise<BundleResult[]> }) {
    this.runs = opts.runs;
    this.bundle = opts.bundle ?? ((root) => bundleFunctions(this.functions, root));
  }

  private readonly bundle: (root: string) => Promise<BundleResult[]>;

  /** Environment of the service for this run (also applied to this process for direct calls). */
  serviceEnv(endpoint: string): Record<string, string> {
    return {
      LOUPE_RUNTIME: 'local',
      LOUPE_TABLE_NAME: 'loupe-bench',
      LOUPE_DYNAMODB_ENDPOINT: endpoint,
      LOUPE_DATA_DIR: this.dataDir,
      LOUPE_MASTER_KEY: this.masterKey,
      LOUPE_LOG_LEVEL: 'ERROR',
      AWS_REGION: 'local',
      POWERTOOLS_SERVICE_NAME: 'loupe',
    };
  }

  /** Starts the local store once and points this process's configuration at it. */
  storeEndpoint(): Promise<string> {
    this.store ??= startLocalStore(join(this.dataDir, 'store'), 'loupe-bench').then((s) => {
      Object.assign(process.env, this.serviceEnv(s.endpoint));
      resetConfig();
      resetDocumentClient();
      return s;
    });
    return this.store.then((s) => s.endpoint);
  }

  /** Environment for a child process running a bundle: the service's, and nothing inherited but PATH. */
  async childEnv(): Promise<Record<string, string>> {
    return {
      PATH: process.env.PATH ?? '',
      HOME: this.dataDir,
      ...this.serviceEnv(await this.storeEndpoint()),
    };
  }

  /** An organization with an admin key in the local store (created once). */
  org(): Promise<BenchOrg> {
    this.orgPromise ??= this.storeEndpoint().then(async () => {
      const o = await createOrganization({ name: 'Bench org', adminEmail: 'bench@example.com' });
      return { orgId: o.orgId, userId: o.userId, key: o.key };
    });
    return this.orgPromise;
  }

  /** Every function bundled once with the deployment settings. */
  bundles(): Promise<BundleResult[]> {
    mkdirSync(this.bundleRoot, { recursive: true });
    this.bundlePromise ??= this.bundle(this.bundleRoot);
    return this.bundlePromise;
  }

  async close(): Promise<void> {
    resetDocumentClient();
    if (this.store) await (await this.store).close();
    rmSync(this.dataDir, { recursive: true, force: true });
    rmSync(this.bundleRoot, { recursive: true, force: true });
  }
}

export const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
export const ms = (n: number) => `${n.toFixed(1)} ms`;
export const kib = (n: number) => `${(n / 1024).toFixed(1)} KiB`;
