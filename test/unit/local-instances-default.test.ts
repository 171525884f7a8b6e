import { describe, expect, it } from 'vitest';
import { defaultInstances } from '../../infra/local/instances';

describe('default handler instances of the local runtime', () => {
  it('one per core above 2 cores, one on 2 cores (beside the main thread), none on 1 core', () => {
    expect([1, 2, 3, 4, 8].map((cores) => defaultInstances(cores))).toEqual([0, 1, 3, 4, 8]);
  });
});
