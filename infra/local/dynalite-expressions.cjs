// dynalite (the local store) parses every UpdateExpression, ConditionExpression, KeyConditionExpression,
// FilterExpression and ProjectionExpression with its PEG parsers on every call, although the service
// sends the same few expressions over and over with new values (issue 33: about 0.13 ms per expression,
// a third of the store's CPU per request). This keeps the parsed form per expression.
//
// A parse depends on the expression, the attribute names, and the values' types (type checks), never on
// the values themselves, except for BETWEEN (bounds compared) and attribute_type (the type name read):
// expressions with those are never cached. The cache key is the expression, the names and the values'
// types; the cached tree is parsed with a stand-in value of the right type for each `:value`, and each
// hit is a copy of that tree with the call's own values put where the stand-ins were. The names and
// values the expression used are recorded, so that dynalite's "unused in expressions" check still sees
// them used. Errors are never cached: a parse that fails (or whose result depends on values) runs again
// with the call's own context, exactly as before. Loaded before dynalite by store-client.ts and
// store-process.mjs; exported for the tests (test/unit/dynalite-expressions.test.ts).
const TYPES = ['S', 'N', 'B', 'NULL', 'BOOL', 'SS', 'NS', 'BS', 'L', 'M'];
const MAX_ENTRIES = 2000;

/** The first attribute-value type present, as dynalite's parsers read it (getImmediateType). */
function typeOf(value) {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return null;
  for (const t of TYPES) if (value[t] != null) return t;
  return null;
}

/** True when the tree holds a node whose checks read values (BETWEEN, attribute_type). */
function valueDependent(node) {
  if (!node || typeof node !== 'object') return false;
  if (Array.isArray(node)) return node.some(valueDependent);
  if (node.type === 'between' || (node.type === 'function' && node.name === 'attribute_type')) return true;
  for (const k in node) if (valueDependent(node[k])) return true;
  return false;
}

/** A copy of `node` with each stand-in replaced by the call's value (identity: the parser returns them as given). */
function substitute(node, standIns, values) {
  if (!node || typeof node !== 'object') return node;
  const key = standIns.get(node);
  if (key !== undefined) return values[key];
  if (Array.isArray(node)) return node.map((n) => substitute(n, standIns, values));
  const out = Object.create(Object.getPrototypeOf(node));
  for (const k of Object.keys(node)) out[k] = substitute(node[k], standIns, values);
  return out;
}

/** Tests compare cached and uncached parses: while `state.bypass` is set, every call parses. */
const state = { bypass: false };

/** Wraps `parser.parse` with the cache; returns the cache (a Map) for tests. */
function cacheParser(parser) {
  const parse = parser.parse;
  const cache = new Map();
  parser.parse = function cachedParse(text, options) {
    const context = options?.context;
    if (state.bypass || !context || typeof text !== 'string') return parse.call(this, text, options);
    const values = context.attrVals || {};
    const names = context.attrNames || {};
    const valueKeys = Object.keys(values);
    const valueTypes = [];
    for (const k of valueKeys) {
      const t = typeOf(values[k]);
      if (!t) return parse.call(this, text, options);
      valueTypes.push(`${k}=${t}`);
    }
    const key = `${context.isKeyCondition ? 'K' : ''}\u0000${text}\u0000${JSON.stringify(names)}\u0000${valueTypes.join(',')}`;
    let entry = cache.get(key);
    if (entry === undefined) {
      // Parsed once with stand-ins: one object per value, of the value's type.
      const standIns = new Map();
      const standInVals = {};
      for (const k of valueKeys) {
        const t = typeOf(values[k]);
        const s = { [t]: t === 'N' ? '0' : `\u0000${k}` };
        standIns.set(s, k);
        standInVals[k] = s;
      }
      const unusedNames = { ...(context.unusedAttrNames || {}) };
      const unusedVals = { ...(context.unusedAttrVals || {}) };
      let tree;
      try {
        tree = parse.call(this, text, {
          ...options,
          context: {
            ...context,
            attrVals: standInVals,
            unusedAttrNames: unusedNames,
            unusedAttrVals: unusedVals,
          },
        });
      } catch {
        tree = undefined;
      }
      if (!tree || typeof tree !== 'object' || valueDependent(tree)) {
        entry = null; // errors and value-dependent checks: parsed each time, as dynalite does
      } else {
        entry = {
          tree,
          standIns,
          usedNames: Object.keys(context.unusedAttrNames || {}).filter((k) => !(k in unusedNames)),
          usedVals: Object.keys(context.unusedAttrVals || {}).filter((k) => !(k in unusedVals)),
        };
      }
      if (cache.size >= MAX_ENTRIES) cache.delete(cache.keys().next().value);
      cache.set(key, entry);
    }
    if (entry === null) return parse.call(this, text, options);
    if (context.unusedAttrNames) for (const k of entry.usedNames) delete context.unusedAttrNames[k];
    if (context.unusedAttrVals) for (const k of entry.usedVals) delete context.unusedAttrVals[k];
    return substitute(entry.tree, entry.standIns, values);
  };
  return cache;
}

const caches = {};
for (const name of ['conditionParser', 'updateParser', 'projectionParser']) {
  const parser = require(`dynalite/db/${name}`);
  if (!parser.__loupeCached) {
    caches[name] = cacheParser(parser);
    parser.__loupeCached = true;
  }
}

module.exports = { caches, state };
