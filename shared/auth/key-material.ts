import { createHash, randomBytes } from 'node:crypto';

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

export const hashKey = (key: string): string => createHash('sha256').update(key).digest('hex');
export const keyPrefix = (key: string): string => key.slice(0, 11);
export const looksLikeKey = (key: string): boolean => KEY_PATTERN.test(key);
