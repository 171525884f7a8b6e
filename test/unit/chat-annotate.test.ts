import { describe, expect, it } from 'vitest';
import { parseAnnotationJson } from '../../shared/ai/annotate';

describe('model annotation answers', () => {
  it('reads the JSON answer, with or without a code fence, ignoring non-string entries', () => {
    expect(parseAnnotationJson('{"table":"T","columns":{"a":"A","b":3,"c":" "}}')).toEqual({
      table: 'T',
      columns: { a: 'A' },
    });
    expect(parseAnnotationJson('```json\n{"columns":{"a":"A"}}\n```')).toEqual({
      table: undefined,
      columns: { a: 'A' },
    });
  });

  it('rejects prose, arrays and answers without any description', () => {
    expect(parseAnnotationJson('The table holds customers.')).toBeNull();
    expect(parseAnnotationJson('[]')).toBeNull();
    expect(parseAnnotationJson('{"table":"","columns":{}}')).toBeNull();
  });
});
