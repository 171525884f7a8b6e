/**
 * Turns driver values into JSON that keeps their meaning:
 * - big integers (bigint, int8, DECIMAL/NUMERIC) → strings (drivers are configured to hand them over as strings;
 *   a JS bigint that still arrives becomes a string, or a number when it is a safe integer and `safeBigInts`);
 * - Date → ISO 8601 string; binary (Buffer, Uint8Array, BSON Binary) → base64;
 * - JSON columns → objects/arrays, normalized recursively;
 * - BSON ObjectId, Decimal128, Long, Timestamp, UUID → strings; Int32/Double → numbers;
 * - NaN and ±Infinity (not representable in JSON) → strings.
 */

export interface NormalizeOptions {
  /** SQLite: integers read as bigint come back as numbers when they fit in a double exactly. */
  safeBigInts?: boolean;
}

const bsonString = new Set(['ObjectId', 'ObjectID', 'Decimal128', 'Long', 'Timestamp', 'UUID']);
/** Shared default, so that a call without options allocates nothing. */
const NO_OPTIONS: NormalizeOptions = {};

export function normalizeValue(v: unknown, opts: NormalizeOptions = NO_OPTIONS, depth = 0): unknown {
  if (v === null || v === undefined) return null;
  switch (typeof v) {
    case 'string':
    case 'boolean':
      return v;
    case 'number':
      return Number.isFinite(v) ? v : String(v);
    case 'bigint':
      return opts.safeBigInts && v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= BigInt(Number.MIN_SAFE_INTEGER)
        ? Number(v)
        : v.toString();
    case 'function':
    case 'symbol':
      return null;
  }
  if (v instanceof Date) return Number.isNaN(v.getTime()) ? null : v.toISOString();
  if (Buffer.isBuffer(v)) return v.toString('base64');
  if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64');
  if (v instanceof ArrayBuffer) return Buffer.from(v).toString('base64');
  if (depth > 64) return '[nested too deeply]';
  if (Array.isArray(v)) return v.map((x) => normalizeValue(x, opts, depth + 1));
  const o = v as Record<string, unknown> & { _bsontype?: string; toString(): string };
  const bsontype = o._bsontype;
  if (typeof bsontype === 'string') {
    if (bsonString.has(bsontype)) return bsontype === 'ObjectId' ? o.toString() : String(o.toString());
    if (bsontype === 'Int32' || bsontype === 'Double')
      return normalizeValue(Number((o as { value?: unknown }).value));
    if (bsontype === 'Binary') {
      const b = o as unknown as {
        buffer: Uint8Array;
        sub_type?: number;
        toUUID?: () => { toString(): string };
      };
      if (b.sub_type === 4 && typeof b.toUUID === 'function') return b.toUUID().toString();
      return Buffer.from(b.buffer).toString('base64');
    }
    if (bsontype === 'BSONRegExp') {
      const r = o as unknown as { pattern: string; options: string };
      return `/${r.pattern}/${r.options}`;
    }
    if (bsontype === 'MinKey' || bsontype === 'MaxKey') return bsontype;
    if (bsontype === 'Code') return String((o as { code?: unknown }).code);
    if (bsontype === 'DBRef') {
      const r = o as unknown as { collection: string; oid: unknown; db?: string };
      return {
        $ref: r.collection,
        $id: normalizeValue(r.oid, opts, depth + 1),
        ...(r.db ? { $db: r.db } : {}),
      };
    }
  }
  if (v instanceof RegExp) return v.toString();
  if (v instanceof Map) return normalizeValue(Object.fromEntries(v), opts, depth + 1);
  if (v instanceof Set) return [...v].map((x) => normalizeValue(x, opts, depth + 1));
  // pg intervals and similar value objects describe themselves in ISO form.
  if (typeof (o as { toISOString?: unknown }).toISOString === 'function')
    return (o as unknown as { toISOString(): string }).toISOString();
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(o)) out[k] = normalizeValue(x, opts, depth + 1);
  return out;
}

/** Column names made unique (`id`, `id_2`, …) so rows as objects never lose a column. */
export function uniqueColumns(names: string[]): string[] {
  const seen = new Map<string, number>();
  const taken = new Set(names);
  return names.map((raw, i) => {
    const name = raw === '' ? `column_${i + 1}` : raw;
    const count = (seen.get(name) ?? 0) + 1;
    seen.set(name, count);
    if (count === 1) return name;
    let n = count;
    let candidate = `${name}_${n}`;
    while (taken.has(candidate)) candidate = `${name}_${++n}`;
    taken.add(candidate);
    return candidate;
  });
}

/** Builds a JSON-safe row object from an array of driver values (hot path: one loop, no closures). */
export function rowOf(
  columns: string[],
  values: unknown[],
  opts?: NormalizeOptions,
): Record<string, unknown> {
  const row: Record<string, unknown> = {};
  for (let i = 0; i < columns.length; i++) {
    const v = values[i];
    // Strings and booleans are already JSON values: skip the call for the most common cells.
    row[columns[i]] = typeof v === 'string' || typeof v === 'boolean' ? v : normalizeValue(v, opts);
  }
  return row;
}

/** JSON.stringify writes each UTF-16 unit of a string as at most 6 bytes (`\u001f`), plus two quotes. */
const stringBound = (s: string) => 6 * s.length + 2;
/** The longest JSON form of a finite number is 25 characters (`-0.0000012345678901234567`). */
const NUMBER_BOUND = 32;

/** The lower bound found by the last jsonBound call (a module variable: the hot path allocates nothing). */
let lastLower = 0;

/**
 * An upper bound of `Buffer.byteLength(JSON.stringify(row))` computed from lengths alone, or -1 when a
 * value is not a string, number, boolean or null (the caller then measures exactly). Also leaves a lower
 * bound in `lastLower`: a string's JSON takes at least its length plus two quotes in bytes (UTF-8 never
 * takes fewer bytes than UTF-16 units, and escapes only add), whatever the other values are.
 */
function jsonBound(row: Record<string, unknown>): number {
  let n = 2;
  let lower = 2;
  let exact = true;
  for (const k in row) {
    const v = row[k];
    n += stringBound(k) + 2; // "key": and a comma
    lower += k.length + 3;
    if (typeof v === 'string') {
      n += stringBound(v);
      lower += v.length + 2;
    } else if (typeof v === 'number' || typeof v === 'boolean' || v === null) {
      n += NUMBER_BOUND;
      lower += 1;
    } else exact = false;
  }
  lastLower = lower;
  return exact ? n : -1;
}

/**
 * Collects rows under the row cap (`maxRows`) and the byte cap (`maxBytes` of JSON). `add` returns
 * false once the result is full; the caller stops reading (the extra row proves truncation).
 */
export class RowCollector {
  readonly rows: Record<string, unknown>[] = [];
  truncated = false;
  /** Exact JSON bytes of rows[0, measured) (each row + 1 for its comma), plus the brackets. */
  private bytes = 2;
  private measured = 0;
  /** Upper bounds of the JSON bytes (+ 1) of rows[measured, length), and their sum. */
  private readonly bounds: number[] = [];
  private pending = 0;

  constructor(
    private readonly maxRows: number,
    private readonly maxBytes: number,
  ) {}

  /**
   * Rows are serialized only when the cap might be reached: while the exact bytes so far plus upper
   * bounds of the unmeasured rows stay under maxBytes, a row is taken without JSON.stringify. Otherwise
   * the oldest unmeasured rows are measured exactly until the bounds fit, or all of them are and this
   * row is measured too; so a row is taken exactly when the exact JSON of all rows so far, plus this
   * row, fits.
   */
  add(row: Record<string, unknown>): boolean {
    if (this.truncated) return false;
    if (this.rows.length >= this.maxRows) {
      this.truncated = true;
      return false;
    }
    const bound = jsonBound(row);
    // A row that cannot fit, whatever its exact size (a huge value): refused without serializing it.
    if (this.bytes + lastLower + 1 > this.maxBytes) {
      this.truncated = true;
      return false;
    }
    if (bound >= 0) {
      while (this.bytes + this.pending + bound + 1 > this.maxBytes && this.measured < this.rows.length)
        this.measureOne();
      if (this.bytes + this.pending + bound + 1 <= this.maxBytes) {
        this.pending += bound + 1;
        this.bounds.push(bound + 1);
        this.rows.push(row);
        return true;
      }
    }
    while (this.measured < this.rows.length) this.measureOne();
    const size = Buffer.byteLength(JSON.stringify(row)) + 1;
    if (this.bytes + size > this.maxBytes) {
      this.truncated = true;
      return false;
    }
    this.bytes += size;
    this.bounds.push(0);
    this.rows.push(row);
    this.measured = this.rows.length;
    return true;
  }

  private measureOne(): void {
    const i = this.measured++;
    this.pending -= this.bounds[i];
    this.bytes += Buffer.byteLength(JSON.stringify(this.rows[i])) + 1;
  }
}
