import { describe, expect, it } from 'vitest';
import { mailtoOf } from '../../shared/workflows/actions/email-delivery';
import { backoffMs, MAX_RETRY_WAIT_MS, sanitizeUrl } from '../../shared/workflows/actions/webhook';

describe('attempt records', () => {
  it('sanitizeUrl keeps scheme, host and path only', () => {
    expect(sanitizeUrl('https://u:p@hooks.example.com:443/a/b?token=x#frag')).toBe(
      'https://hooks.example.com/a/b',
    );
    expect(sanitizeUrl('https://hooks.example.com')).toBe('https://hooks.example.com/');
    expect(sanitizeUrl('not a url')).toBe('(invalid url)');
  });

  it('mailto lists the To addresses, bounded', () => {
    const base = {
      cc: ['c@example.com'],
      subject: 's',
      body: '',
      attachCsv: false,
      includeTable: false,
      critical: true,
    };
    expect(mailtoOf({ ...base, to: ['a@example.com', 'b@example.org'] })).toBe(
      'mailto:a@example.com,b@example.org',
    );
    const many = Array.from({ length: 50 }, (_, i) => `${'x'.repeat(40)}${i}@example.com`);
    const m = mailtoOf({ ...base, to: many });
    expect(m.length).toBeLessThanOrEqual(1000);
    expect(m).toMatch(/\(\+\d+ more\)$/);
    expect(m).not.toContain('c@example.com');
  });
});

describe('backoff', () => {
  it('exponential with equal jitter: between half and all of base·2^(n-1), capped', () => {
    for (let n = 1; n <= 5; n++) {
      const exp = Math.min(MAX_RETRY_WAIT_MS, 500 * 2 ** (n - 1));
      const seen = new Set<number>();
      for (let i = 0; i < 200; i++) {
        const d = backoffMs(500, n);
        expect(d).toBeGreaterThanOrEqual(exp / 2);
        expect(d).toBeLessThanOrEqual(exp);
        seen.add(d);
      }
      expect(seen.size).toBeGreaterThan(10);
    }
    expect(backoffMs(30_000, 5)).toBeLessThanOrEqual(MAX_RETRY_WAIT_MS);
  });
});
