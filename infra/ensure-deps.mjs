// Runs before `npm start` and `npm test` (plain JavaScript, so any installed node can run it): on a
// fresh clone it installs the locked dependencies, which also brings the pinned Node 24; then it builds
// the web console (console/dist, not committed) when it is missing.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

if (!existsSync('node_modules/.package-lock.json') || !existsSync('node_modules/.bin/node')) {
  console.log('Installing dependencies (npm ci)…');
  const r = spawnSync('npm', ['ci', '--no-audit', '--no-fund'], { stdio: 'inherit' });
  if (r.status !== 0) process.exit(r.status ?? 1);
}
if (!existsSync('console/dist/index.html')) {
  console.log('Building the web console (npm run build:console)…');
  const r = spawnSync('npm', ['run', 'build:console'], { stdio: 'inherit' });
  process.exit(r.status ?? 1);
}
