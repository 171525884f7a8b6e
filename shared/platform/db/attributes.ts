/**
 * Documents (plain JavaScript values) to DynamoDB attribute values and back, by the rules of
 * @aws-sdk/util-dynamodb 3.x `marshall(doc, { removeUndefinedValues: true, convertClassInstanceToMap: false })`
 * and `unmarshall(map)` (default options): the same outputs and the same errors (class and message) for
 * every input, hostile ones included. test/unit/attributes.test.ts runs both on a table of edge cases and
 * thousands of generated values. Written out because util-dynamodb's general code (option checks, a list
 * of type names built per value, `Object.entries` per attribute) was ~13% of the local store's CPU.
 *
 * marshall, rule by rule (the first that matches):
 *  - undefined: refused at the top; inside maps, lists and sets removed (functions too, except in sets)
 *  - null → NULL; arrays → L (holes removed); an object whose `constructor.name` is
 *    'Set' → SS/NS/BS by its first member (the others converted as that type, unchecked; empty refused),
 *    'Map' → M (its entries), 'Object' (or no constructor) → M (enumerable properties, inherited ones too)
 *  - binary (Buffer, ArrayBuffer, DataView, typed arrays, Blob, File: by constructor name) → B, the same object
 *  - booleans → BOOL; numbers → N, refusing NaN, ±Infinity and numbers beyond ±Number.MAX_SAFE_INTEGER;
 *    util-dynamodb's NumberValue → its N; bigint → N; strings → S (empty strings kept)
 *  - anything else (Date, class instances, symbols, functions at the top) refused.
 * A top-level map or list gives its members (the attribute-value map), anything else its attribute value.
 * unmarshall: an attribute value's first own key with a defined value decides; N is a number, or a bigint
 * beyond the safe integers (an error when that is not an integer); NS/SS/BS are Sets; B is the same object.
 *
 * Where it can differ (nothing the service passes): NumberValue is recognised by its class's name and
 * method, not `instanceof` (a look-alike class is accepted); tampered built-in prototypes; getters with
 * side effects inside an attribute value (read as needed, not all first); V8's TypeErrors on malformed
 * input quote variable names, kept as util-dynamodb's here but changed by minification.
 */

export type AttributeValue = Record<string, any>;
export type AttributeMap = Record<string, AttributeValue>;

const MAX = Number.MAX_SAFE_INTEGER;
const MIN = Number.MIN_SAFE_INTEGER;
const UNDEFINED_REFUSED =
  'Pass options.removeUndefinedValues=true to remove undefined values from map/array/set.';
const BINARY_TYPES = new Set([
  'ArrayBuffer',
  'Blob',
  'Buffer',
  'DataView',
  'File',
  'Int8Array',
  'Uint8Array',
  'Uint8ClampedArray',
  'Int16Array',
  'Uint16Array',
  'Int32Array',
  'Uint32Array',
  'Float32Array',
  'Float64Array',
  'BigInt64Array',
  'BigUint64Array',
]);

/** A document → its attribute-value map (an object's or a Map's members, a list's items), or attribute value. */
export function marshall(data: unknown): any {
  if (typeof data === 'object' && data !== null) {
    // The common case first: a plain object is its members.
    if (Array.isArray(data)) return toList(data);
    if (data.constructor?.name === 'Object') return toMapFromProps(data);
  }
  const attributeValue = toAttr(data);
  const [key, value] = Object.entries(attributeValue)[0];
  return key === 'M' || key === 'L' ? value : attributeValue;
}

/** An attribute-value map → the document. */
export function unmarshall(data: unknown): Record<string, any> {
  // util-dynamodb reads it as `{ M: data }`: undefined there is a value missing.
  if (data === undefined) throw new Error('No value defined: {}');
  return convertMap(data);
}

function toAttr(data: any): AttributeValue {
  switch (typeof data) {
    case 'string':
      return { S: data };
    case 'number':
      return data >= MIN && data <= MAX ? { N: String(data) } : toNumberAttr(data);
    case 'boolean':
      return { BOOL: data };
    case 'bigint':
      return { N: data.toString() };
    case 'undefined':
      throw new Error(UNDEFINED_REFUSED);
    case 'object':
      if (data === null) return { NULL: true };
      if (Array.isArray(data)) return { L: toList(data) };
  }
  return toAttrByConstructor(data);
}

/** util-dynamodb's order of checks for everything but primitives, null and arrays (above). */
function toAttrByConstructor(data: any): AttributeValue {
  const name = data.constructor?.name;
  if (name === 'Set') return toSetAttr(data);
  if (name === 'Map') return { M: toMapFromIterable(data) };
  if (name === 'Object' || (!data.constructor && typeof data === 'object'))
    return { M: toMapFromProps(data) };
  if (isBinary(data)) return { B: data };
  if (typeof data === 'boolean' || name === 'Boolean') return { BOOL: data.valueOf() };
  if (typeof data === 'number' || name === 'Number') return toNumberAttr(data);
  if (isNumberValue(data)) return data.toAttributeValue();
  if (typeof data === 'bigint') return { N: data.toString() };
  if (typeof data === 'string' || name === 'String') return { S: data.toString() };
  throw new Error(
    `Unsupported type passed: ${data}. Pass options.convertClassInstanceToMap=true to marshall typeof object as map attribute.`,
  );
}

function toList(data: unknown[]): AttributeValue[] {
  // Another constructor (an Array subclass) makes filter/map build its own kind of array: as util-dynamodb.
  if (data.constructor !== Array)
    return data.filter((item) => typeof item !== 'function' && item !== undefined).map(toAttr1);
  const out: AttributeValue[] = [];
  for (let i = 0; i < data.length; i++) {
    // Array.prototype.filter skips holes; reading one gives undefined, removed as well.
    const item = data[i];
    if (item !== undefined && typeof item !== 'function') out.push(toAttr(item));
  }
  return out;
}

const toAttr1 = (item: unknown) => toAttr(item);

function toMapFromProps(data: any): AttributeMap {
  // Assignment (not defineProperty) as util-dynamodb does: a `__proto__` member sets the prototype.
  const map: AttributeMap = {};
  for (const key in data) {
    const value = data[key];
    if (value !== undefined && typeof value !== 'function') map[key] = toAttr(value);
  }
  return map;
}

function toMapFromIterable(data: Iterable<[unknown, unknown]>): AttributeMap {
  const map: AttributeMap = {};
  for (const [key, value] of data)
    if (value !== undefined && typeof value !== 'function') map[key as string] = toAttr(value);
  return map;
}

/** Variable names as util-dynamodb's: V8's TypeErrors name them ("set is not iterable"). */
function toSetAttr(set: any): AttributeValue {
  const setToOperate = new Set([...set].filter((value) => value !== undefined));
  if (setToOperate.size === 0) throw new Error('Pass a non-empty set, or options.convertEmptyValues=true.');
  const item = setToOperate.values().next().value;
  const members = Array.from(setToOperate);
  if (isNumberValue(item)) return { NS: members.map((_) => _.toString()) };
  if (typeof item === 'number') return { NS: members.map((num) => toNumberAttr(num).N) };
  if (typeof item === 'bigint') return { NS: members.map((big) => big.toString()) };
  if (typeof item === 'string') return { SS: members.map((text) => text.toString()) };
  if (isBinary(item)) return { BS: members };
  throw new Error('Only Number Set (NS), Binary Set (BS) or String Set (SS) are allowed.');
}

/** util-dynamodb's number rule for any value it treats as a number (boxed numbers, members of a number set). */
function toNumberAttr(num: any): { N: string } {
  const text = num.toString();
  if (text === 'NaN' || text === 'Infinity' || text === '-Infinity')
    throw new Error(`Special numeric value ${num.toString()} is not allowed`);
  if (Number(num) > MAX)
    throw new Error(
      `Number ${num.toString()} is greater than Number.MAX_SAFE_INTEGER. Use NumberValue from @aws-sdk/lib-dynamodb.`,
    );
  if (Number(num) < MIN)
    throw new Error(
      `Number ${num.toString()} is lesser than Number.MIN_SAFE_INTEGER. Use NumberValue from @aws-sdk/lib-dynamodb.`,
    );
  return { N: num.toString() };
}

function isBinary(data: any): boolean {
  return data?.constructor ? BINARY_TYPES.has(data.constructor.name) : false;
}

/**
 * util-dynamodb's NumberValue (also lib-dynamodb's), recognised without loading it: an object whose
 * prototype chain holds a class named NumberValue with `toAttributeValue` (util-dynamodb: `instanceof`).
 */
function isNumberValue(data: any): boolean {
  if (data === null || (typeof data !== 'object' && typeof data !== 'function')) return false;
  for (let p = Object.getPrototypeOf(data); p !== null; p = Object.getPrototypeOf(p))
    if (
      Object.hasOwn(p, 'constructor') &&
      p.constructor?.name === 'NumberValue' &&
      typeof p.toAttributeValue === 'function'
    )
      return true;
  return false;
}

function toNative(data: any): unknown {
  // An attribute value's own enumerable keys in order (as Object.entries); the first defined one decides.
  const keys = Object.keys(data);
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i];
    const value = data[key];
    if (value === undefined) continue;
    switch (key) {
      case 'NULL':
        return null;
      case 'BOOL':
        return Boolean(value);
      case 'N':
        return convertNumber(value);
      case 'B':
      case 'S':
        return value;
      case 'L':
        return convertList(value);
      case 'M':
        return convertMap(value);
      case 'NS':
        return new Set(value.map(convertNumber1));
      case 'BS':
      case 'SS':
        return new Set(value.map(same));
      default:
        throw new Error(`Unsupported type passed: ${key}`);
    }
  }
  throw new Error(`No value defined: ${JSON.stringify(data)}`);
}

const same = (item: unknown) => item;
const convertNumber1 = (item: unknown) => convertNumber(item);
const toNative1 = (item: unknown) => toNative(item);

function convertNumber(numString: any): number | bigint {
  const num = Number(numString);
  if ((num > MAX || num < MIN) && num !== Infinity && num !== -Infinity) {
    try {
      return BigInt(numString);
    } catch {
      throw new Error(
        `${numString} can't be converted to BigInt. Set options.wrapNumbers to get string value.`,
      );
    }
  }
  return num;
}

/** `list`, `map`: util-dynamodb's names, which V8's TypeErrors on a malformed value quote. */
function convertList(list: any): unknown[] {
  return list.map(toNative1);
}

function convertMap(map: any): Record<string, any> {
  if (map !== null && typeof map === 'object' && Object.getPrototypeOf(map) === Object.prototype) {
    // A copy of the map (its own enumerable values read once, as Object.entries does) converted in place:
    // no property added one by one, so a map of many attributes stays a fast object. A `__proto__` member
    // or symbol keys (the copy has them, Object.entries not) take the general path.
    const acc = { ...map };
    const keys = Object.keys(acc);
    if (Object.getOwnPropertySymbols(acc).length > 0) return convertEntries(keys, valuesOf(keys, acc), 0);
    for (let i = 0; i < keys.length; i++) {
      if (keys[i] === '__proto__') return convertEntries(keys, valuesOf(keys, acc), i);
      acc[keys[i]] = toNative(acc[keys[i]]);
    }
    return acc;
  }
  // Other maps (dynalite's null-prototype copies, …): every value read first, as Object.entries does.
  const keys = Object.keys(map);
  return convertEntries(keys, valuesOf(keys, map), 0);
}

const valuesOf = (keys: string[], map: any): unknown[] => keys.map((key) => map[key]);

/** util-dynamodb's convertMap: members assigned one by one (a `__proto__` member sets the prototype). */
function convertEntries(keys: string[], values: unknown[], converted: number): Record<string, any> {
  const acc: Record<string, any> = {};
  for (let i = 0; i < keys.length; i++) acc[keys[i]] = i < converted ? values[i] : toNative(values[i]);
  return acc;
}
