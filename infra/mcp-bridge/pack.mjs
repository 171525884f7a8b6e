// Packs the stdio bridge (this folder) into console/dist/loupe-mcp.tgz, part of `npm run build:console`:
// the local runtime and the deployed console (CloudFront) then serve it at /loupe-mcp.tgz, so that
// `npx -y <origin>/loupe-mcp.tgz` runs it without a checkout (docs/guides/mcp.md).
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const here = import.meta.dirname;
const dist = join(here, '..', '..', 'console', 'dist');
const { name, version } = JSON.parse(readFileSync(join(here, 'package.json'), 'utf8'));
const tmp = mkdtempSync(join(tmpdir(), 'loupe-mcp-pack-'));
try {
  const r = spawnSync('npm', ['pack', here, '--pack-destination', tmp, '--loglevel=error'], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  if (r.status !== 0) process.exit(r.status ?? 1);
  mkdirSync(dist, { recursive: true }); // run alone (a test) before the console was ever built
  copyFileSync(join(tmp, `${name}-${version}.tgz`), join(dist, 'loupe-mcp.tgz'));
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
