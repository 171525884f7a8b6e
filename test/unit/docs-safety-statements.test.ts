import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * Issue 32, point 6: what the docs say about owner functions and approvers is what the code does.
 * The behaviour itself is tested where it lives: test/integration/guard-owner-functions.test.ts and
 * guard-owner-code.test.ts (an owner's STABLE function, and owner code reached through views,
 * policies, domains and casts, are refused until listed), test/integration/approvals.test.ts (a
 * member named in a rule approves a write; an admin a rule does not name gets 403).
 */
const doc = (...path: string[]) =>
  readFileSync(join(__dirname, '..', '..', ...path), 'utf8').replace(/\s+/g, ' ');

describe('docs statements on owner code and approvers', () => {
  it('querying: an owner-defined STABLE function is refused until listed, and implicit owner code too', () => {
    const q = doc('docs', 'guides', 'querying.md');
    expect(q).not.toMatch(/a `STABLE` one runs/);
    expect(q).not.toMatch(/stays as the owner designed it/);
    expect(q).toContain(
      'An owner-defined function is refused whatever its volatility label, `STABLE` and `IMMUTABLE` included, until it is listed.',
    );
    expect(q).toContain('the functions in the definitions of the views read (also views of views)');
    expect(q).toContain('`pg_catalog` first in its search path');
    // Issue 43: that rule is strict mode's; open mode (the role reaches no escape) runs owner code.
    expect(q).toContain(
      'PostgreSQL in strict mode: no code the database owner wrote runs through a read unless',
    );
    expect(q).toContain('With none (**open mode**');
  });

  it('function rule and security model: owner code reached without a call is no longer "the owner\'s design"', () => {
    for (const d of [
      doc('docs', 'internals', 'function-rule.md'),
      doc('docs', 'internals', 'security-model.md'),
    ]) {
      expect(d).not.toMatch(/stays the owner's design/);
      expect(d).toContain('unless the connection');
    }
  });

  it('approvals: rule approvers may be members; with no rule any admin; nowhere "a second admin" as the rule', () => {
    const a = doc('docs', 'guides', 'approvals.md');
    expect(a).toContain('only the approvers it names, who may be members or admins');
    expect(a).toContain('where none matches, any admin');
    expect(doc('docs', 'README.md')).not.toContain('a second admin');
    const readme = doc('README.md');
    expect(readme).not.toContain('only once an admin other than its author approves it');
    expect(readme).toContain('the approvers it names (members or admins)');
  });
});
