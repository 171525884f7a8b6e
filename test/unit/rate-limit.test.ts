import { describe, expect, it } from 'vitest';
import { InstanceRateLimiter } from '../../shared/http/rate-limit';
import type { AppError } from '../../shared/platform/errors';

describe('per-instance fixed-window rate limiter', () => {
  const t0 = Date.UTC(2026, 0, 1, 12, 0, 0);

  it('allows the limit, then answers 429 with Retry-After until the window ends', () => {
    const rl = new InstanceRateLimiter(3);
    expect(rl.hit('ip', t0)['RateLimit-Remaining']).toBe('2');
    rl.hit('ip', t0 + 1000);
    expect(rl.hit('ip', t0 + 2000)['RateLimit-Remaining']).toBe('0');
    try {
      rl.hit('ip', t0 + 45_000);
      expect.unreachable();
    } catch (e) {
      const err = e as AppError;
      expect(err.status).toBe(429);
      expect(err.code).toBe('RATE_LIMITED');
      expect(err.headers?.['Retry-After']).toBe('15');
      expect(err.headers?.['X-RateLimit-Remaining']).toBe('0');
    }
    expect(rl.hit('ip', t0 + 60_000)['RateLimit-Remaining']).toBe('2');
  });

  it('counts each client separately', () => {
    const rl = new InstanceRateLimiter(1);
    rl.hit('a', t0);
    expect(() => rl.hit('a', t0)).toThrow();
    expect(rl.hit('b', t0)['RateLimit-Remaining']).toBe('0');
  });
});
