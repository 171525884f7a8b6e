import { marshall, unmarshall } from './attributes';

/**
 * Converting between the service's documents (plain JavaScript values) and DynamoDB's JSON protocol,
 * as @aws-sdk/lib-dynamodb and the SDK's JSON serializer do: attribute-value maps in the operations'
 * inputs and outputs are marshalled by attributes.ts (the rules of @aws-sdk/util-dynamodb's marshall
 * with removeUndefinedValues and without convertClassInstanceToMap: undefined values removed, class
 * instances refused; test/unit/attributes.test.ts holds it to util-dynamodb), and binary values travel
 * as base64 text.
 */

type AttributeMap = Record<string, any>;
type Json = Record<string, any>;

const toAttributes = (doc: unknown): AttributeMap | undefined =>
  doc === undefined ? undefined : marshall(doc);
const fromAttributes = (m: AttributeMap | undefined): Json | undefined =>
  m === undefined ? undefined : unmarshall(m);

/** An operation's input in document form → its wire input (attribute values, binary as base64). */
export function documentInput(input: Json): Json {
  const out: Json = {};
  for (const [k, v] of Object.entries(input)) {
    if (v === undefined) continue;
    if (k === 'Key' || k === 'Item' || k === 'ExpressionAttributeValues' || k === 'ExclusiveStartKey')
      out[k] = toAttributes(v);
    else if (k === 'RequestItems') out[k] = mapRequestItems(v, toAttributes);
    else out[k] = v;
  }
  return toWire(out);
}

/** An operation's wire output → document form (attribute maps unmarshalled, base64 back to bytes). */
export function documentOutput(output: Json): Json {
  const out: Json = { ...output };
  for (const k of ['Item', 'Attributes', 'LastEvaluatedKey'])
    if (out[k]) out[k] = fromAttributes(fromWire(out[k]));
  if (Array.isArray(out.Items)) out.Items = out.Items.map((i: AttributeMap) => fromAttributes(fromWire(i)));
  if (out.UnprocessedItems)
    out.UnprocessedItems = mapRequestItems(out.UnprocessedItems, (m) => fromAttributes(fromWire(m)));
  if (out.UnprocessedKeys)
    out.UnprocessedKeys = mapRequestItems(out.UnprocessedKeys, (m) => fromAttributes(fromWire(m)));
  if (out.Responses) {
    const byTable: Json = {};
    for (const [t, items] of Object.entries(out.Responses as Record<string, AttributeMap[]>))
      byTable[t] = items.map((i) => fromAttributes(fromWire(i)));
    out.Responses = byTable;
  }
  return out;
}

/**
 * `RequestItems` of BatchWriteItem (`{ table: [{ PutRequest: { Item } } | { DeleteRequest: { Key } }] }`)
 * and of BatchGetItem (`{ table: { Keys: [...] , ... } }`), and their Unprocessed* answers.
 */
function mapRequestItems(items: Json, fn: (m: AttributeMap) => unknown): Json {
  const out: Json = {};
  for (const [table, reqs] of Object.entries(items)) {
    if (Array.isArray(reqs))
      out[table] = reqs.map((r: Json) => {
        if (r.PutRequest) return { ...r, PutRequest: { ...r.PutRequest, Item: fn(r.PutRequest.Item) } };
        if (r.DeleteRequest)
          return { ...r, DeleteRequest: { ...r.DeleteRequest, Key: fn(r.DeleteRequest.Key) } };
        return r;
      });
    else if (reqs && Array.isArray(reqs.Keys)) out[table] = { ...reqs, Keys: reqs.Keys.map(fn) };
    else out[table] = reqs;
  }
  return out;
}

/** Binary attribute values travel as base64 in the JSON protocol. Copies only what changes. */
export function toWire(v: any): any {
  if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64');
  if (Array.isArray(v)) {
    let out: unknown[] | undefined;
    for (let i = 0; i < v.length; i++) {
      const w = toWire(v[i]);
      if (w === v[i]) continue;
      if (!out) out = v.slice();
      out[i] = w;
    }
    return out ?? v;
  }
  if (v && typeof v === 'object') {
    let out: Json | undefined;
    for (const k in v) {
      const w = toWire(v[k]);
      if (w === v[k]) continue;
      if (!out) out = { ...v } as Json;
      out[k] = w;
    }
    return out ?? v;
  }
  return v;
}

/** An attribute-value map from the wire: `B`/`BS` base64 back to bytes. Copies only what changes. */
export function fromWire(m: AttributeMap): AttributeMap {
  let out: AttributeMap | undefined;
  for (const k in m) {
    const w = fromWireValue(m[k]);
    if (w === m[k]) continue;
    if (!out) out = { ...m } as AttributeMap;
    out[k] = w;
  }
  return out ?? m;
}

function fromWireValue(av: any): any {
  if (!av || typeof av !== 'object') return av;
  if (typeof av.B === 'string') return { B: new Uint8Array(Buffer.from(av.B, 'base64')) };
  if (Array.isArray(av.BS)) return { BS: av.BS.map((b: string) => new Uint8Array(Buffer.from(b, 'base64'))) };
  if (Array.isArray(av.L)) {
    let l: unknown[] | undefined;
    for (let i = 0; i < av.L.length; i++) {
      const w = fromWireValue(av.L[i]);
      if (w === av.L[i]) continue;
      if (!l) l = av.L.slice() as unknown[];
      l[i] = w;
    }
    return l ? { L: l } : av;
  }
  if (av.M && typeof av.M === 'object') {
    const m = fromWire(av.M);
    return m === av.M ? av : { M: m };
  }
  return av;
}
