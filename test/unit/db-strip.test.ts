import { describe, expect, it } from 'vitest';
import { strip } from '../../shared/platform/db/store';

describe('strip (the store layer removes key attributes before an item leaves it)', () => {
  it('removes pk, sk, gsi1pk, gsi1sk, ttl and the one attribute asked, keeps everything else as it is', () => {
    const nested = { a: [1, { b: null }] };
    const item = {
      pk: 'ORG#o',
      sk: 'CONN#c',
      gsi1pk: 'ACTIVECONN',
      gsi1sk: 'ORG#o#CONN#c',
      ttl: 5,
      kind: 'connection',
      name: 'n',
      nothing: null,
      missing: undefined,
      zero: 0,
      nested,
    };
    expect(strip(item)).toEqual({
      kind: 'connection',
      name: 'n',
      nothing: null,
      missing: undefined,
      zero: 0,
      nested,
    });
    const out = strip(item, 'kind');
    expect(Object.keys(out)).toEqual(['name', 'nothing', 'missing', 'zero', 'nested']);
    expect((out as { nested: unknown }).nested).toBe(nested);
    expect(item.pk).toBe('ORG#o'); // the item itself is left as it was
    expect(strip({ pk: 'p', sk: 's' })).toEqual({});
  });
});
