const NUMERIC = /^[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$/;
const BIG_INTEGER = /^[-+]?\d{16,}$/;

/**
 * A METRIC widget's value for people: numbers (and the numeric strings databases return for DECIMAL and
 * BIGINT) with the reader's thousands separators and decimal mark; whole numbers without decimals,
 * others with at most 2 decimals, or 3 significant digits below 1 (0.00123). Integers too large for a
 * double keep every digit. Anything else is shown as it came.
 */
export function formatMetric(value: unknown, locale?: string): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'bigint') return new Intl.NumberFormat(locale).format(value);
  const text = typeof value === 'number' ? String(value) : typeof value === 'string' ? value.trim() : null;
  if (text === null || !NUMERIC.test(text))
    return typeof value === 'object' ? JSON.stringify(value) : String(value);
  if (BIG_INTEGER.test(text)) return new Intl.NumberFormat(locale).format(BigInt(text));
  const n = Number(text);
  if (!Number.isFinite(n)) return String(value);
  const abs = Math.abs(n);
  const options: Intl.NumberFormatOptions =
    Number.isInteger(n) || abs >= 1 ? { maximumFractionDigits: 2 } : { maximumSignificantDigits: 3 };
  return new Intl.NumberFormat(locale, options).format(n);
}
