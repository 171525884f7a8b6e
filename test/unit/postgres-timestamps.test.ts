import { describe, expect, it } from 'vitest';
import { isoTimestamp } from '../../shared/databases/drivers/postgres';

/** The rules as first written (regular expressions only): the fast path must give the same text. */
function reference(text: string): string {
  if (!/^\d{4,}-\d\d-\d\d \d/.test(text)) return text;
  const t = text.replace(' ', 'T');
  return t.replace(/\+00(:00)?$/, 'Z').replace(/([+-]\d\d)$/, '$1:00');
}

const samples = [
  '2024-01-02 03:04:05+00',
  '2024-01-02 03:04:05.123456+00',
  '2024-01-02 03:04:05.1+00',
  '2024-01-02 03:04:05',
  '2024-01-02 03:04:05.999999',
  '2024-01-02 03:04:05+00:00',
  '2024-01-02 03:04:05-08',
  '2024-01-02 03:04:05+05:30',
  '2024-01-02 03:04:05.5-03:30',
  '2024-01-02 03:04:05+00 BC',
  '2024-01-02 03:04:05 BC',
  '0001-01-01 00:00:00+00',
  '12345-01-02 03:04:05+00',
  '294276-12-31 23:59:59.999999+00',
  'infinity',
  '-infinity',
  '2024-01-02',
  '2024-01-02 ',
  '2024-01-02 x3:04:05+00',
  '2024/01/02 03:04:05+00',
  '2024-01-02T03:04:05+00',
  '2024-01-02 03:04:05+000',
  '2024-01-02 03:04:+00',
  '',
];

describe('isoTimestamp', () => {
  it('turns PostgreSQL timestamps of a UTC session into ISO 8601', () => {
    expect(isoTimestamp('2024-01-02 03:04:05.123456+00')).toBe('2024-01-02T03:04:05.123456Z');
    expect(isoTimestamp('2024-01-02 03:04:05')).toBe('2024-01-02T03:04:05');
    expect(isoTimestamp('2024-01-02 03:04:05-08')).toBe('2024-01-02T03:04:05-08:00');
    expect(isoTimestamp('infinity')).toBe('infinity');
  });

  it('gives the same text as the general rules for every form, common or not', () => {
    for (const s of samples) expect(isoTimestamp(s), s).toBe(reference(s));
  });
});
