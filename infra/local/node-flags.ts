/**
 * Node flags of the local server's process (`npm start`, and every test or bench that starts the server
 * as its own process). `--max-semi-space-size=8` caps each V8 semi-space of the young generation at
 * 8 MiB: left to itself V8 grows the young generation of a busy server to about 128 MiB and keeps it, so
 * the server's resident memory rose by ~120 MB under sustained load without any leak (bench `memory`:
 * growth 132 → 86 MB over 40,000 requests, peak 467 → 341 MB, same throughput). The handler instances
 * (worker threads) get the same bound through `resourceLimits` (LOCAL_YOUNG_GENERATION_MB).
 */
export const LOCAL_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=8'];

/** The young generation of a handler instance's thread: two 8 MiB semi-spaces and their promotion room. */
export const LOCAL_YOUNG_GENERATION_MB = 24;
