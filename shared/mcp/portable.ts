type Json = Record<string, unknown>;

/** Keywords that describe a schema without constraining its value. */
const ANNOTATIONS = new Set([
  'title',
  'description',
  'default',
  'examples',
  'deprecated',
  'readOnly',
  'writeOnly',
  '$comment',
]);
/** Keywords whose value is one subschema, a list of them, or a map of them. */
const ONE = new Set([
  'items',
  'additionalProperties',
  'unevaluatedProperties',
  'additionalItems',
  'not',
  'contains',
  'propertyNames',
  'if',
  'then',
  'else',
]);
const LIST = new Set(['anyOf', 'oneOf', 'allOf', 'prefixItems']);
const MAP = new Set(['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas']);
/** Any JSON value, spelled with one `type` per branch. */
const ANY_JSON = [
  { type: 'string' },
  { type: 'number' },
  { type: 'boolean' },
  { type: 'null' },
  { type: 'object', additionalProperties: true },
  { type: 'array' },
];
const typeOf = (v: unknown) =>
  v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v === 'number' ? 'number' : typeof v;

/**
 * The JSON Schema clients port most easily (what the MCP Inspector's `--strict` check asks): a nullable
 * `type: ["string", "null"]` becomes `anyOf` branches of one type each, and a schema that constrains
 * nothing (`{}`, zod's unknown) says what it accepts: free-form under `additionalProperties` (`true`),
 * else any JSON value as one-type branches. The values accepted are the same.
 */
export function portable(node: unknown, keyword?: string): unknown {
  if (!node || typeof node !== 'object' || Array.isArray(node)) return node;
  const out: Json = {};
  for (const [k, v] of Object.entries(node as Json)) {
    if (ONE.has(k)) out[k] = Array.isArray(v) ? v.map((x) => portable(x, k)) : portable(v, k);
    else if (LIST.has(k) && Array.isArray(v)) out[k] = v.map((x) => portable(x, k));
    else if (MAP.has(k) && v && typeof v === 'object')
      out[k] = Object.fromEntries(Object.entries(v as Json).map(([n, x]) => [n, portable(x, k)]));
    else out[k] = v;
  }
  const notes = Object.fromEntries(Object.entries(out).filter(([k]) => ANNOTATIONS.has(k)));
  const rest = Object.fromEntries(Object.entries(out).filter(([k]) => !ANNOTATIONS.has(k) && k !== 'type'));
  if (Array.isArray(out.type) && out.type.length > 1) {
    const branches = (out.type as string[]).map((t) => {
      if (t === 'null') return { type: 'null' };
      const b: Json = { ...rest, type: t };
      if (Array.isArray(b.enum))
        b.enum = b.enum.filter((x) => typeOf(x) === t || (t === 'integer' && typeOf(x) === 'number'));
      return b;
    });
    return { ...notes, anyOf: branches };
  }
  if (Array.isArray(out.type) && out.type.length === 1) out.type = out.type[0];
  const constrains = Object.keys(out).some((k) => !ANNOTATIONS.has(k));
  if (!constrains && keyword !== 'not') {
    if (keyword === 'additionalProperties' || keyword === 'unevaluatedProperties') return true;
    return { ...notes, anyOf: ANY_JSON };
  }
  return out;
}
