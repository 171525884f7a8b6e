import { describe, expect, it } from 'vitest';
import { credentialHeaders, redactorFor } from '../../shared/credentials/apply';

describe('credential headers and redaction', () => {
  it('builds the headers of each kind', () => {
    expect(credentialHeaders({ kind: 'BEARER', config: { token: 't0k' } })).toEqual({
      authorization: 'Bearer t0k',
    });
    expect(credentialHeaders({ kind: 'BASIC', config: { username: 'ü', password: 'p:w' } })).toEqual({
      authorization: `Basic ${Buffer.from('ü:p:w', 'utf8').toString('base64')}`,
    });
    expect(
      credentialHeaders({ kind: 'API_KEY_HEADER', config: { headerName: 'X-Key', value: 'v' } }),
    ).toEqual({
      'X-Key': 'v',
    });
    expect(
      credentialHeaders({
        kind: 'CUSTOM_HEADERS',
        config: {
          headers: [
            { name: 'A', value: '1' },
            { name: 'B', value: '2' },
          ],
        },
      }),
    ).toEqual({ A: '1', B: '2' });
  });

  it('removes values with regex characters, overlapping values and every encoded form', () => {
    const value = 'a.b*c+(d)$^|?[x]\\"q"/é';
    const redact = redactorFor({
      kind: 'CUSTOM_HEADERS',
      config: {
        headers: [
          { name: 'A', value },
          { name: 'B', value: `${value}-longer` },
        ],
      },
    });
    const b64 = Buffer.from(value, 'utf8').toString('base64');
    const text = [
      value,
      `${value}-longer`,
      encodeURIComponent(value),
      JSON.stringify({ v: value }),
      b64,
      b64.replace(/=+$/, ''),
      Buffer.from(value, 'utf8').toString('base64url'),
      'a.b-c unrelated',
    ].join(' | ');
    const out = redact(text);
    expect(out).not.toContain(value);
    expect(out).not.toContain(encodeURIComponent(value));
    expect(out).not.toContain(JSON.stringify(value).slice(1, -1));
    expect(out).not.toContain(b64.replace(/=+$/, ''));
    expect(out).not.toContain('-longer'); // the longer value went whole, not as value + leftover
    expect(out).toContain('a.b-c unrelated');
    expect(redact('')).toBe('');
  });

  it('removes the BASIC base64 of user:pass and both parts', () => {
    const redact = redactorFor({ kind: 'BASIC', config: { username: 'svc-user', password: 'pw-9f8e7d' } });
    const b64 = Buffer.from('svc-user:pw-9f8e7d').toString('base64');
    const out = redact(`Authorization: Basic ${b64}; user svc-user; pass pw-9f8e7d`);
    expect(out).toBe('Authorization: Basic [REDACTED]; user [REDACTED]; pass [REDACTED]');
  });
});
