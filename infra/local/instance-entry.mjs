// Entry of a handler-instance worker thread (started by instances.ts). The thread loads TypeScript
// through tsx, as `npm start` does, whether or not the parent registered a loader this thread inherits
// (vitest's does not reach worker threads).
import { workerData } from 'node:worker_threads';
import { register } from 'tsx/esm/api';

register();
const { runInstance } = await import('./instance.ts');
await runInstance(workerData);
