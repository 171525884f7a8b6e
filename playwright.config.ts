import { join } from 'node:path';
import { defineConfig } from '@playwright/test';
import { CHROMIUM, CHROMIUM_ARGS } from './test/support/browser';

// Like vitest.config.ts: test processes trust the CA of the local HTTPS receivers
// (test/support/https-receiver.ts); Node reads it only at process start, before the workers are forked.
process.env.NODE_EXTRA_CA_CERTS = join(import.meta.dirname, 'test', 'fixtures', 'tls', 'ca.pem');

/**
 * The web console's browser tests: `npm run test:browser` (`npm test` runs them after vitest). They drive
 * Debian's chromium (LOUPE_CHROMIUM, default /usr/bin/chromium; Playwright never downloads a browser)
 * against the real local runtime each worker starts (test/console/fixtures.ts), with one embedded
 * PostgreSQL for the run (test/console/global-setup.ts).
 */
export default defineConfig({
  testDir: 'test/console',
  testMatch: '*.spec.ts',
  globalSetup: './test/console/global-setup.ts',
  outputDir: '.tmp/playwright-results',
  // Two cores: one worker per spec file at most two at a time; each worker runs its own local runtime.
  workers: 2,
  fullyParallel: false,
  retries: 0,
  forbidOnly: !!process.env.CI,
  timeout: 60_000,
  expect: { timeout: 20_000 },
  // `npm test` (test/run.mjs) adds a JSON report, from which it prints a plain "N passed, N failed" line.
  reporter: 'list',
  use: {
    browserName: 'chromium',
    headless: true,
    viewport: { width: 1280, height: 900 },
    launchOptions: { executablePath: CHROMIUM, args: CHROMIUM_ARGS },
    screenshot: 'only-on-failure',
  },
});
