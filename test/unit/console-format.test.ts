import { describe, expect, it } from 'vitest';
import { formatMetric } from '../../console/src/components/format';

/** A METRIC widget's value: the reader's separators, sensible decimals, every digit of a big integer. */
describe('console METRIC formatting', () => {
  it.each([
    [1234567.891, 'en-US', '1,234,567.89'],
    [1234567.891, 'de-DE', '1.234.567,89'],
    [1234567.891, 'fr-FR', '1 234 567,89'],
    ['98765.4321', 'en-US', '98,765.43'],
    [42, 'en-US', '42'],
    ['-1500', 'en-US', '-1,500'],
    [0, 'en-US', '0'],
    [0.001234, 'en-US', '0.00123'],
    ['0.5', 'de-DE', '0,5'],
    ['12345678901234567890', 'en-US', '12,345,678,901,234,567,890'],
    [12345678901234567890n, 'en-US', '12,345,678,901,234,567,890'],
    ['1e3', 'en-US', '1,000'],
  ])('%s in %s is %s', (value, locale, shown) => {
    // Intl uses a narrow no-break space in some locales: compare with plain spaces.
    expect(formatMetric(value, locale).replace(/[\u202f\u00a0]/g, ' ')).toBe(shown);
  });

  it('shows anything that is not a number as it came', () => {
    expect(formatMetric('n/a', 'en-US')).toBe('n/a');
    expect(formatMetric('12 apples', 'en-US')).toBe('12 apples');
    expect(formatMetric('Infinity', 'en-US')).toBe('Infinity');
    expect(formatMetric(null, 'en-US')).toBe('');
    expect(formatMetric(true, 'en-US')).toBe('true');
    expect(formatMetric({ a: 1 }, 'en-US')).toBe('{"a":1}');
    expect(formatMetric('<b>1</b>', 'en-US')).toBe('<b>1</b>');
  });
});
