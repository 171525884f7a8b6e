import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { CorpusFixture } from '../../bench/guard';
import type { DbType } from '../../shared/databases/drivers/types';
import { assertReadOnly } from '../../shared/guard/read';

/**
 * Corpus regression (issue 9): valid reads of the public corpus that the real databases accept
 * (derived by `npm run bench -- --only guard`; regenerate the fixture with
 * `GUARD_CORPUS_WRITE=1 npm run bench -- --only guard`). The guard may refuse at most the count
 * recorded when the fixture was made, per dialect.
 */
const fixture = JSON.parse(
  readFileSync(join(__dirname, '..', 'fixtures', 'guard-corpus.json'), 'utf8'),
) as CorpusFixture;

describe('read-only guard on the corpus of valid reads', () => {
  for (const [dialect, { statements, maxRefused }] of Object.entries(fixture.dialects))
    it(`${dialect}: refuses at most ${maxRefused} of ${statements.length} valid reads`, async () => {
      expect(statements.length).toBeGreaterThan(100);
      const refused: string[] = [];
      for (const sql of statements)
        await assertReadOnly(dialect as DbType, sql).catch((e: Error) =>
          refused.push(`${e.message}\n  ${sql}`),
        );
      expect(refused.length, refused.slice(0, 5).join('\n')).toBeLessThanOrEqual(maxRefused);
    });
});
