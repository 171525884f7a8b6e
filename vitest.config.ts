import { join } from 'node:path';
import { defineConfig } from 'vitest/config';

// Test processes trust the CA of the local HTTPS receivers (test/support/https-receiver.ts). Node reads
// NODE_EXTRA_CA_CERTS only at process start, so it is set here, before vitest forks its workers.
process.env.NODE_EXTRA_CA_CERTS = join(import.meta.dirname, 'test', 'fixtures', 'tls', 'ca.pem');

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    // The runtime's logs go to .tmp/test-logs/, printed for a test that fails (test/support/quiet-logs.ts).
    setupFiles: ['test/support/quiet-logs.ts'],
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 120_000,
    fileParallelism: true,
    maxWorkers: 2,
    env: { LOUPE_LOG_LEVEL: 'SILENT' },
    // `npm test` (test/run.mjs) adds a JSON report, from which it prints a plain "N passed, N failed" line.
    reporters: ['default'],
  },
});
