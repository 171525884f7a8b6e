import { describe, expect, it } from 'vitest';
import { costCents, DEFAULT_PRICES, parsePriceTable, priceFor } from '../../shared/usage/prices';

describe('model price table', () => {
  it('uses the defaults when LOUPE_MODEL_PRICES is unset or blank', () => {
    expect(parsePriceTable(undefined)).toEqual(DEFAULT_PRICES);
    expect(parsePriceTable('  ')).toEqual(DEFAULT_PRICES);
  });

  it('overrides and adds models from LOUPE_MODEL_PRICES while keeping the other defaults', () => {
    const t = parsePriceTable(
      JSON.stringify({
        'gpt-4o-mini': { promptPerMillion: 1, completionPerMillion: 2 },
        'llama3.1:8b': { promptPerMillion: 0, completionPerMillion: 0 },
      }),
    );
    expect(t['gpt-4o-mini']).toEqual({ promptPerMillion: 1, completionPerMillion: 2 });
    expect(t['llama3.1:8b']).toEqual({ promptPerMillion: 0, completionPerMillion: 0 });
    expect(t['gpt-4o']).toEqual(DEFAULT_PRICES['gpt-4o']);
  });

  it('rejects malformed JSON and malformed entries naming the variable', () => {
    expect(() => parsePriceTable('{nope')).toThrow(/LOUPE_MODEL_PRICES is not valid JSON/);
    expect(() =>
      parsePriceTable(JSON.stringify({ m: { promptPerMillion: -1, completionPerMillion: 2 } })),
    ).toThrow(/LOUPE_MODEL_PRICES.*m\.promptPerMillion/);
    expect(() => parsePriceTable(JSON.stringify({ m: { promptPerMillion: 1 } }))).toThrow(
      /completionPerMillion/,
    );
    expect(() => parsePriceTable('[]')).toThrow(/LOUPE_MODEL_PRICES/);
  });

  it('finds a model exactly, then by the longest listed prefix, then falls back to the default price', () => {
    const t = parsePriceTable(JSON.stringify({ default: { promptPerMillion: 7, completionPerMillion: 9 } }));
    expect(priceFor('gpt-4o-mini', t)).toEqual(DEFAULT_PRICES['gpt-4o-mini']);
    expect(priceFor('GPT-4o-mini', t)).toEqual(DEFAULT_PRICES['gpt-4o-mini']);
    expect(priceFor('gpt-4o-mini-2024-07-18', t)).toEqual(DEFAULT_PRICES['gpt-4o-mini']);
    expect(priceFor('gpt-4o-2024-08-06', t)).toEqual(DEFAULT_PRICES['gpt-4o']);
    expect(priceFor('some-local-model', t)).toEqual({ promptPerMillion: 7, completionPerMillion: 9 });
    expect(priceFor('some-local-model', DEFAULT_PRICES)).toEqual(DEFAULT_PRICES.default);
  });

  it('computes fractional cents from tokens and per-million prices', () => {
    const p = { promptPerMillion: 15, completionPerMillion: 60 };
    expect(costCents(p, 1_000_000, 0)).toBe(15);
    expect(costCents(p, 0, 1_000_000)).toBe(60);
    expect(costCents(p, 1234, 567)).toBeCloseTo((1234 * 15 + 567 * 60) / 1e6, 9);
    expect(costCents(p, 0, 0)).toBe(0);
  });
});
