// dynalite's `checkTypes` (validations/index.js), the first step of every call: it converts and checks
// each member of a request against the operation's type descriptors. It re-reads the descriptors on every
// value (a regular expression per value to split `Map<AttributeValue>`, a new descriptor object for every
// attribute value, new closures per call): about a tenth of the local store's CPU per call (issue 33).
//
// This is the same walk with each descriptor read once: `compile(type)` turns a descriptor into a function
// of the value, kept per descriptor object. Every case, conversion, error message and mutation is the
// original's, in the same order (the original mutates the objects it checks: members that are unknown or
// null are deleted before the rest is read). test/unit/dynalite-types.test.ts compares both on generated
// valid and invalid requests of every operation, outputs, errors and the inputs left behind.
//
// Used by store-client.ts (the in-process store) in place of validations.checkTypes.

function typeError(msg) {
  const err = new Error(msg);
  err.statusCode = 400;
  err.body = { __type: 'com.amazon.coral.service#SerializationException', Message: msg };
  return err;
}

/** The descriptor the original builds for `AttrStruct<subtype>` on every value. */
function attrStruct(subtype) {
  return {
    type: `${subtype}<AttributeValue>`,
    children: {
      S: 'String',
      B: 'Blob',
      N: 'String',
      BOOL: 'Boolean',
      NULL: 'Boolean',
      BS: { type: 'List', children: 'Blob' },
      NS: { type: 'List', children: 'String' },
      SS: { type: 'List', children: 'String' },
      L: { type: 'List', children: 'AttrStruct<ValueStruct>' },
      M: { type: 'Map<AttributeValue>', children: 'AttrStruct<ValueStruct>' },
    },
  };
}

/** Compiled checkers of object descriptors (the operations' `types` and their members). */
const compiledObjects = new WeakMap();
/** Compiled checkers of string descriptors (`'String'`, `'AttrStruct<ValueStruct>'`, …). */
const compiledStrings = new Map();
/** Compiled `checkTypes` of each descriptor map (ValueStruct and FieldStruct children, operations' types). */
const compiledMaps = new WeakMap();

/** A function (val) => checked value, as the original's checkType(val, type). */
function compile(type) {
  const cache = typeof type === 'string' ? compiledStrings : compiledObjects;
  let fn = cache.get(type);
  if (fn) return fn;
  // Filled in before compiling the children: AttrStruct<ValueStruct> refers to itself through L and M.
  let impl;
  fn = (val) => (val == null ? null : impl(val));
  cache.set(type, fn);
  impl = build(type);
  return fn;
}

function build(descriptor) {
  let children = descriptor.children;
  if (typeof children === 'string') children = { type: children };
  let type = descriptor;
  if (descriptor.type) type = descriptor.type;
  const m = type.match(/(.+?)<(.+)>$/);
  let subtype;
  if (m != null) {
    type = m[1];
    subtype = m[2];
  }
  // Children are compiled when first needed (a descriptor may name children it never reaches).
  let child;
  const childFn = () => (child ??= compile(children));
  let childMap;
  const childMapFn = () => (childMap ??= checkTypesOf(children));

  switch (type) {
    case 'AttrStruct': {
      let inner;
      return (val) => {
        inner ??= compile(attrStruct(subtype));
        return inner(val);
      };
    }
    case 'Boolean':
      return (val) => {
        switch (typeof val) {
          case 'number':
            throw typeError(
              `${val % 1 === 0 ? 'NUMBER_VALUE' : 'DECIMAL_VALUE'} cannot be converted to ${type}`,
            );
          case 'string':
            val = val.toUpperCase();
            if (~['TRUE', '1', 'YES'].indexOf(val)) val = true;
            else if (~['FALSE', '0', 'NO'].indexOf(val)) val = false;
            else throw typeError('Unexpected token received from parser');
            break;
          case 'object':
            throw objectForScalar(val, `java.lang.${type}`);
        }
        return val;
      };
    case 'Short':
    case 'Integer':
    case 'Long':
    case 'Double':
      return (val) => {
        switch (typeof val) {
          case 'boolean':
            throw typeError(`${val ? 'TRUE_VALUE' : 'FALSE_VALUE'} cannot be converted to ${type}`);
          case 'number':
            if (type !== 'Double') val = Math.floor(val);
            break;
          case 'string':
            throw typeError(`STRING_VALUE cannot be converted to ${type}`);
          case 'object':
            throw objectForScalar(val, `java.lang.${type}`);
        }
        return val;
      };
    case 'String':
      return (val) => {
        switch (typeof val) {
          case 'boolean':
            throw typeError(`${val ? 'TRUE_VALUE' : 'FALSE_VALUE'} cannot be converted to ${type}`);
          case 'number':
            throw typeError(
              `${val % 1 === 0 ? 'NUMBER_VALUE' : 'DECIMAL_VALUE'} cannot be converted to ${type}`,
            );
          case 'object':
            throw objectForScalar(val, `java.lang.${type}`);
        }
        return val;
      };
    case 'Blob':
      return (val) => {
        switch (typeof val) {
          case 'boolean':
          case 'number':
            throw typeError('only base-64-encoded strings are convertible to bytes');
          case 'object':
            throw objectForScalar(val, 'java.nio.ByteBuffer');
        }
        if (val.length % 4)
          throw typeError(`Base64 encoded length is expected a multiple of 4 bytes but found: ${val.length}`);
        if (Buffer.from(val, 'base64').toString('base64') !== val)
          // val is a string here
          throw typeError('Invalid last non-pad Base64 character dectected');
        return val;
      };
    case 'List':
      return collection(true, 'Unexpected field type', NOT_A_LIST, (val) => val.map(childFn()));
    case 'ParameterizedList':
      return collection(true, PARAMETERIZED, NOT_A_LIST, (val) => val.map(childFn()));
    case 'ParameterizedMap':
      return collection(
        false,
        PARAMETERIZED,
        () =>
          'Unrecognized collection type java.util.Map<java.lang.String, com.amazonaws.dynamodb.v20120810.AttributeValue>',
        (val) => mapOf(val, childFn()),
      );
    case 'Map':
      return collection(
        false,
        'Unexpected field type',
        () =>
          `Unrecognized collection type java.util.Map<java.lang.String, ${~subtype.indexOf('.') ? subtype : `com.amazonaws.dynamodb.v20120810.${subtype}`}>`,
        (val) => mapOf(val, childFn()),
      );
    case 'ValueStruct':
      return collection(
        false,
        'Unexpected value type in payload',
        () => `Unrecognized collection type class com.amazonaws.dynamodb.v20120810.${subtype}`,
        (val) => childMapFn()(val),
      );
    case 'FieldStruct':
      return collection(
        false,
        'Unexpected field type',
        () => `Unrecognized collection type class com.amazonaws.dynamodb.v20120810.${subtype}`,
        (val) => childMapFn()(val),
      );
    default:
      return () => {
        throw new Error(`Unknown type: ${type}`);
      };
  }
}

/** The error for a list or a map where a scalar of Java class `javaClass` is wanted. */
const objectForScalar = (val, javaClass) =>
  typeError(
    Array.isArray(val)
      ? `Unrecognized collection type class ${javaClass}`
      : 'Start of structure or map found where not expected',
  );

const NOT_A_LIST = () => 'Start of structure or map found where not expected';

/**
 * The checker of a list (`isList`) or of a map or structure: a boolean, number or string is refused with
 * `scalarError`, an object of the other shape (a map for a list, an array for a map) with `shapeError()`;
 * anything else goes to `body`. (The original's checkType, case by case, throws the same.)
 */
function collection(isList, scalarError, shapeError, body) {
  return (val) => {
    const t = typeof val;
    if (t === 'boolean' || t === 'number' || t === 'string') throw typeError(scalarError);
    if (t === 'object' && Array.isArray(val) !== isList) throw typeError(shapeError());
    return body(val);
  };
}

const PARAMETERIZED =
  "class sun.reflect.generics.reflectiveObjects.ParameterizedTypeImpl cannot be cast to class java.lang.Class (sun.reflect.generics.reflectiveObjects.ParameterizedTypeImpl and java.lang.Class are in module java.base of loader 'bootstrap')";

function mapOf(val, c) {
  const out = {};
  for (const key of Object.keys(val)) out[key] = c(val[key]);
  return out;
}

/** The original's checkTypes(data, types) for one descriptor map, compiled. */
function checkTypesOf(types) {
  let fn = compiledMaps.get(types);
  if (fn) return fn;
  const keys = Object.keys(types);
  let checks;
  fn = (data) => {
    for (const key in data) if (!types[key] || data[key] == null) delete data[key];
    checks ??= keys.map((k) => compile(types[k]));
    const out = {};
    for (let i = 0; i < keys.length; i++) {
      const v = checks[i](data[keys[i]]);
      if (v != null) out[keys[i]] = v;
    }
    return out;
  };
  compiledMaps.set(types, fn);
  return fn;
}

/** Same as dynalite's validations.checkTypes(data, types). */
function checkTypes(data, types) {
  return checkTypesOf(types)(data);
}

module.exports = { checkTypes };
