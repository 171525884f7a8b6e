import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The dependency rule (docs/internals/code-layout.md) lives in biome.json: one noRestrictedImports
 * override per room of shared/, plus noImportCycles. `npm test` runs it through `npm run check`; this
 * proves it refuses a deliberate reverse import, and that every room is covered by it.
 */
const root = join(import.meta.dirname, '..', '..');
const biome = join(root, 'node_modules', '.bin', 'biome');

/** Probe files: [room, source, what the refusal must name (undefined: must be accepted)]. */
const refused: [string, string, string][] = [
  [
    'platform',
    "import { submitQuery } from '../approvals/approvals';\nexport const x = submitQuery;\n",
    'approvals',
  ],
  ['guard', "import { runReadOnly } from '../databases/run';\nexport const x = runReadOnly;\n", 'databases'],
  [
    'guard',
    "import { loadConnection } from '../connections/connections';\nexport const x = loadConnection;\n",
    'connections',
  ],
  ['databases', "import { envelope } from '../http/envelope';\nexport const x = envelope;\n", 'http'],
  [
    'http',
    "import { allEndpoints } from '../../functions/endpoints';\nexport const x = allEndpoints;\n",
    'functions/',
  ],
  [
    'http',
    "import { createApiKey } from '../auth/keys';\nexport const x = createApiKey;\n",
    'caller identity',
  ],
  ['connections', "import { chatEndpoints } from '../chat/api';\nexport const x = chatEndpoints;\n", 'chat'],
  [
    'credentials',
    "import { workflowStore } from '../workflows/store';\nexport const x = workflowStore;\n",
    'workflows',
  ],
];
const accepted: [string, string][] = [
  ['connections', "import { verifyRead } from '../guard/read';\nexport const x = verifyRead;\n"],
  ['databases', "import { verifyRead } from '../guard/read';\nexport const x = verifyRead;\n"],
  ['http', "import type { AuthContext } from '../auth/context';\nexport type X = AuthContext;\n"],
  [
    'workflows',
    "import { getCredentialMeta } from '../credentials/store';\nexport const x = getCredentialMeta;\n",
  ],
];

/** Writes every probe into its room, lints them in one Biome run, removes them; messages per probe. */
function lintProbes(probes: [string, string][]): { status: number | null; messages: string[][] } {
  const tag = `${process.pid}-${Math.random().toString(36).slice(2)}`;
  const files = probes.map(([room], i) => join('shared', room, `layout-probe-${tag}-${i}.ts`));
  try {
    for (const [i, [, source]] of probes.entries()) writeFileSync(join(root, files[i]), source);
    const r = spawnSync(biome, ['lint', '--reporter=json', ...files], { cwd: root, encoding: 'utf8' });
    const report = JSON.parse(r.stdout) as {
      diagnostics: { category: string; message: string; location?: { path?: string } }[];
    };
    return {
      status: r.status,
      messages: files.map((f) =>
        report.diagnostics.filter((d) => d.location?.path === f).map((d) => `${d.category}: ${d.message}`),
      ),
    };
  } finally {
    for (const f of files) rmSync(join(root, f), { force: true });
  }
}

const rooms = readdirSync(join(root, 'shared'), { withFileTypes: true })
  .filter((d) => d.isDirectory())
  .map((d) => d.name);
const biomeConfig = JSON.parse(readFileSync(join(root, 'biome.json'), 'utf8')) as {
  overrides?: { includes: string[]; linter?: { rules?: { style?: { noRestrictedImports?: unknown } } } }[];
};

describe('the dependency rule', () => {
  const all = lintProbes([
    ...refused.map(([room, source]) => [room, source] as [string, string]),
    ...accepted,
  ]);

  it('fails the lint step on a deliberate reverse import', () => {
    expect(all.status).not.toBe(0);
  });

  it.each(refused.map((r, i) => [...r, i] as const))(
    'refuses an import from shared/%s (%#) naming %s',
    (_room, _source, named, i) => {
      expect(all.messages[i].length).toBeGreaterThan(0);
      expect(all.messages[i].join('\n')).toMatch(/lint\/style\/noRestrictedImports/);
      expect(all.messages[i].join('\n')).toContain(named);
    },
  );

  it.each(accepted.map((a, i) => [a[0], refused.length + i] as const))(
    'accepts a downward import from shared/%s',
    (_room, i) => {
      expect(all.messages[i]).toEqual([]);
    },
  );

  it('covers every room of shared/ with a rule, and every room opens with a README', () => {
    const ruled = new Set(
      (biomeConfig.overrides ?? [])
        .filter((o) => o.linter?.rules?.style?.noRestrictedImports)
        .flatMap((o) => o.includes)
        .map((p) => /^shared\/([^/]+)\/\*\*$/.exec(p)?.[1])
        .filter(Boolean),
    );
    expect(rooms.filter((r) => !ruled.has(r))).toEqual([]);
    expect(rooms.filter((r) => !existsSync(join(root, 'shared', r, 'README.md')))).toEqual([]);
  });
});
