import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import {
  isRetryableStatus,
  MAX_ATTEMPTS,
  MAX_QUEUE_DELAY_SECONDS,
  RETRY_DELAYS_SECONDS,
  retryDelayMs,
} from '../../shared/webhooks/schedule';
import { last4Of, maskSecret, newSecret, sign, signedHeaders } from '../../shared/webhooks/signing';

describe('webhook signing (Standard Webhooks)', () => {
  it('makes whsec_ secrets of 32 random bytes and masks them as whsec_… + last 4', () => {
    const a = newSecret();
    const b = newSecret();
    expect(a).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(a.slice(6), 'base64')).toHaveLength(32);
    expect(a).not.toBe(b);
    expect(maskSecret(last4Of(a))).toBe(`whsec_…${a.slice(-4)}`);
  });

  it('signs exactly as the standardwebhooks package does, and its verify accepts our headers', () => {
    const secret = newSecret();
    const wh = new Webhook(secret);
    const id = 'evt_1';
    const body = JSON.stringify({ id, type: 'schema.updated', data: { é: '✓', n: 1 } });
    const at = new Date();
    const ts = Math.floor(at.getTime() / 1000);
    expect(sign(secret, id, ts, body)).toBe(wh.sign(id, at, body));
    const headers = signedHeaders([secret], id, ts, body);
    expect(wh.verify(body, headers)).toEqual(JSON.parse(body));
    // Any change to the body, the id or the timestamp breaks the signature.
    expect(() => wh.verify(`${body} `, headers)).toThrow();
    expect(() => wh.verify(body, { ...headers, 'webhook-id': 'evt_2' })).toThrow();
    expect(() => wh.verify(body, { ...headers, 'webhook-timestamp': String(ts - 1) })).toThrow();
    expect(() => new Webhook(newSecret()).verify(body, headers)).toThrow();
  });

  it('with two secrets (a rotation) the header carries two signatures and each secret verifies', () => {
    const [older, newer] = [newSecret(), newSecret()];
    const ts = Math.floor(Date.now() / 1000);
    const headers = signedHeaders([newer, older], 'evt_3', ts, '{}');
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
    for (const s of [older, newer]) expect(new Webhook(s).verify('{}', headers)).toEqual({});
  });
});

describe('webhook retry schedule', () => {
  it('8 attempts: waits of about 5 s, 30 s, 2 min, 10 min, 30 min, 1 h, 3 h with ±10 % jitter', () => {
    expect(MAX_ATTEMPTS).toBe(8);
    expect(RETRY_DELAYS_SECONDS).toEqual([5, 30, 120, 600, 1800, 3600, 10_800]);
    for (let n = 1; n < MAX_ATTEMPTS; n++) {
      const base = RETRY_DELAYS_SECONDS[n - 1] * 1000;
      expect(retryDelayMs(n, 1, () => 0)).toBe(Math.round(base * 0.9));
      expect(retryDelayMs(n, 1, () => 1)).toBe(Math.round(base * 1.1));
      expect(retryDelayMs(n, 1, () => 0.5)).toBe(base);
    }
    // Waits past SQS's 15-minute delay limit exist (they hop through the queue).
    expect(RETRY_DELAYS_SECONDS.filter((s) => s > MAX_QUEUE_DELAY_SECONDS)).toEqual([1800, 3600, 10_800]);
  });

  it('scales for tests', () => {
    expect(retryDelayMs(1, 0.02, () => 0.5)).toBe(100);
    expect(retryDelayMs(7, 0.001, () => 0.5)).toBe(10_800);
  });

  it('retries 408, 429 and 5xx; fails other statuses at once', () => {
    for (const s of [408, 429, 500, 502, 503, 504, 599]) expect(isRetryableStatus(s), String(s)).toBe(true);
    for (const s of [300, 301, 400, 401, 403, 404, 409, 410, 422])
      expect(isRetryableStatus(s), String(s)).toBe(false);
  });
});
