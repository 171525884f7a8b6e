import { hash, randomBytes } from 'node:crypto';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
export const KEY_PATTERN = /^lp_[0-9A-Za-z]{40,}$/;

/** `lp_` + 43 base62 characters drawn without modulo bias. */
export function generateKey(): string {
  let out = '';
  while (out.length < 43) {
    for (const b of randomBytes(64)) {
      if (b < 248 && out.length < 43) out += BASE62[b % 62];
    }
  }
  return `lp_${out}`;
}

/** SHA-256 of the key, hex (the one-shot `crypto.hash`: no Hash object per request). */
export const hashKey = (key: string): string => hash('sha256', key, 'hex');
export const keyPrefix = (key: string): string => key.slice(0, 11);
export const looksLikeKey = (key: string): boolean => KEY_PATTERN.test(key);
