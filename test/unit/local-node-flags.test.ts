import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LOCAL_NODE_FLAGS } from '../../infra/local/node-flags';

const root = join(import.meta.dirname, '..', '..');

describe('the local server process bounds its young generation', () => {
  it('npm start runs the server with the same Node flags as the tests and benches that spawn it', () => {
    const start = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).scripts.start as string;
    expect(start).toMatch(/^node /);
    for (const flag of LOCAL_NODE_FLAGS) expect(start.split(' ')).toContain(flag);
    expect(start).toContain('infra/local/server.ts');
  });

  it('handler instances get a young-generation limit', () => {
    const source = readFileSync(join(root, 'infra', 'local', 'instances.ts'), 'utf8');
    expect(source).toMatch(/resourceLimits:\s*\{\s*maxYoungGenerationSizeMb: LOCAL_YOUNG_GENERATION_MB/);
  });
});
