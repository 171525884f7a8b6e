import { config } from '../config';
import { documentClient } from './client';

/** Attributes every item carries. */
export interface Keyed {
  pk: string;
  sk: string;
  gsi1pk?: string;
  gsi1sk?: string;
  ttl?: number;
}

export type Item = Keyed & Record<string, unknown>;

const table = () => config().LOUPE_TABLE_NAME;
const isConditionFailure = (e: unknown) =>
  (e as { name?: string })?.name === 'ConditionalCheckFailedException';

/** Strips key attributes (and `also`, if given) before an item leaves the store layer. */
export function strip<T extends Record<string, unknown>>(item: T, also?: string): Omit<T, keyof Keyed> {
  // A loop rather than rest destructuring, which V8 runs about 3 times slower on items of 30 attributes.
  const rest: Record<string, unknown> = {};
  for (const k in item) if (!KEY_ATTRIBUTES.has(k) && k !== also) rest[k] = item[k];
  return rest as Omit<T, keyof Keyed>;
}
const KEY_ATTRIBUTES = new Set(['pk', 'sk', 'gsi1pk', 'gsi1sk', 'ttl']);

type RawItem = Record<string, { N?: string; S?: string; BOOL?: boolean; NULL?: boolean }>;

/** The scalar attributes of an item in the wire format (a failed condition's ALL_OLD is not unmarshalled). */
function scalarsOf(raw: RawItem | undefined): Record<string, unknown> | undefined {
  if (!raw) return undefined;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(raw)) {
    if (v.N !== undefined) out[k] = Number(v.N);
    else if (v.S !== undefined) out[k] = v.S;
    else if (v.BOOL !== undefined) out[k] = v.BOOL;
    else if (v.NULL) out[k] = null;
  }
  return out;
}

/**
 * Thin wrappers over the document client. Each atomic change is one conditional write on one item
 * (dynalite has no transactions).
 */
export const db = {
  async get<T = Item>(pk: string, sk: string): Promise<T | undefined> {
    const out = await documentClient().send('GetItem', {
      TableName: table(),
      Key: { pk, sk },
      ConsistentRead: true,
    });
    return out.Item as T | undefined;
  },

  /** Put; with `ifAbsent` it fails (returns false) when the item exists. */
  async put(
    item: Item,
    opts: {
      ifAbsent?: boolean;
      condition?: string;
      values?: Record<string, unknown>;
      names?: Record<string, string>;
    } = {},
  ): Promise<boolean> {
    try {
      await documentClient().send('PutItem', {
        TableName: table(),
        Item: item,
        ConditionExpression: opts.ifAbsent ? 'attribute_not_exists(pk)' : opts.condition,
        ExpressionAttributeValues: opts.values,
        ExpressionAttributeNames: opts.names,
      });
      return true;
    } catch (e) {
      if (isConditionFailure(e)) return false;
      throw e;
    }
  },

  /**
   * Sets the given attributes (undefined values are removed) on an existing item, optionally under a
   * condition. Returns the new item, or undefined when the item is missing or the condition fails.
   */
  async patch<T = Item>(
    pk: string,
    sk: string,
    changes: Record<string, unknown>,
    opts: { condition?: string; values?: Record<string, unknown>; names?: Record<string, string> } = {},
  ): Promise<T | undefined> {
    const names: Record<string, string> = { ...(opts.names ?? {}) };
    const values: Record<string, unknown> = { ...(opts.values ?? {}) };
    const sets: string[] = [];
    const removes: string[] = [];
    Object.entries(changes).forEach(([k, v], i) => {
      names[`#u${i}`] = k;
      if (v === undefined) removes.push(`#u${i}`);
      else {
        values[`:u${i}`] = v;
        sets.push(`#u${i} = :u${i}`);
      }
    });
    const expr = [
      sets.length ? `SET ${sets.join(', ')}` : '',
      removes.length ? `REMOVE ${removes.join(', ')}` : '',
    ]
      .filter(Boolean)
      .join(' ');
    const condition = ['attribute_exists(pk)', opts.condition].filter(Boolean).join(' AND ');
    try {
      const out = await documentClient().send('UpdateItem', {
        TableName: table(),
        Key: { pk, sk },
        UpdateExpression: expr || 'SET #u_noop = if_not_exists(#u_noop, :u_noop)',
        ConditionExpression: condition,
        ExpressionAttributeNames: expr ? names : { ...names, '#u_noop': 'pk' },
        ExpressionAttributeValues: expr
          ? Object.keys(values).length
            ? values
            : undefined
          : { ...values, ':u_noop': pk },
        ReturnValues: 'ALL_NEW',
      });
      return out.Attributes as T;
    } catch (e) {
      if (isConditionFailure(e)) return undefined;
      throw e;
    }
  },

  /** Raw update for counters and other expressions. Returns ALL_NEW, or undefined on condition failure. */
  async update<T = Item>(input: {
    pk: string;
    sk: string;
    update: string;
    condition?: string;
    names?: Record<string, string>;
    values?: Record<string, unknown>;
  }): Promise<T | undefined> {
    try {
      const out = await documentClient().send('UpdateItem', {
        TableName: table(),
        Key: { pk: input.pk, sk: input.sk },
        UpdateExpression: input.update,
        ConditionExpression: input.condition,
        ExpressionAttributeNames: input.names,
        ExpressionAttributeValues: input.values,
        ReturnValues: 'ALL_NEW',
      });
      return out.Attributes as T;
    } catch (e) {
      if (isConditionFailure(e)) return undefined;
      throw e;
    }
  },

  /**
   * A conditional update that, when the condition fails, says so with what it can tell of the item as it
   * was: DynamoDB returns the old item with the failure (ReturnValuesOnConditionCheckFailure ALL_OLD, no
   * extra call) and `old` holds its scalar attributes (numbers, strings, booleans, null); dynalite returns
   * nothing, and neither does DynamoDB when the item is missing: `old` is then undefined and a caller that
   * needs it reads the item.
   */
  async tryUpdate<T = Item>(input: {
    pk: string;
    sk: string;
    update: string;
    condition: string;
    names?: Record<string, string>;
    values?: Record<string, unknown>;
    returnValues?: 'ALL_NEW' | 'UPDATED_NEW';
  }): Promise<{ ok: true; item: T } | { ok: false; old: Record<string, unknown> | undefined }> {
    try {
      const out = await documentClient().send('UpdateItem', {
        TableName: table(),
        Key: { pk: input.pk, sk: input.sk },
        UpdateExpression: input.update,
        ConditionExpression: input.condition,
        ExpressionAttributeNames: input.names,
        ExpressionAttributeValues: input.values,
        ReturnValues: input.returnValues ?? 'ALL_NEW',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      });
      return { ok: true, item: out.Attributes as T };
    } catch (e) {
      if (isConditionFailure(e)) return { ok: false, old: scalarsOf((e as { Item?: RawItem }).Item) };
      throw e;
    }
  },

  /** Atomically adds `by` to a numeric attribute (creating the item if needed) and returns the new value. */
  async increment(
    pk: string,
    sk: string,
    attribute: string,
    by = 1,
    extra: Record<string, unknown> = {},
  ): Promise<number> {
    const names: Record<string, string> = { '#a': attribute };
    const values: Record<string, unknown> = { ':by': by };
    const sets: string[] = [];
    Object.entries(extra).forEach(([k, v], i) => {
      names[`#e${i}`] = k;
      values[`:e${i}`] = v;
      sets.push(`#e${i} = if_not_exists(#e${i}, :e${i})`);
    });
    const out = await documentClient().send('UpdateItem', {
      TableName: table(),
      Key: { pk, sk },
      UpdateExpression: `ADD #a :by${sets.length ? ` SET ${sets.join(', ')}` : ''}`,
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
      ReturnValues: 'UPDATED_NEW',
    });
    return Number(out.Attributes?.[attribute] ?? 0);
  },

  /** Delete; false when `ifExists` or `condition` (with `values`) does not hold. */
  async delete(
    pk: string,
    sk: string,
    opts: { ifExists?: boolean; condition?: string; values?: Record<string, unknown> } = {},
  ): Promise<boolean> {
    try {
      await documentClient().send('DeleteItem', {
        TableName: table(),
        Key: { pk, sk },
        ConditionExpression: opts.ifExists ? 'attribute_exists(pk)' : opts.condition,
        ExpressionAttributeValues: opts.condition ? opts.values : undefined,
      });
      return true;
    } catch (e) {
      if (isConditionFailure(e)) return false;
      throw e;
    }
  },

  /**
   * Query one partition (optionally by sort-key prefix or range), following pagination until `limit`
   * items are read or the partition ends.
   */
  async query<T = Item>(opts: {
    pk: string;
    prefix?: string;
    between?: [string, string];
    index?: 'gsi1';
    newestFirst?: boolean;
    limit?: number;
    filter?: string;
    names?: Record<string, string>;
    values?: Record<string, unknown>;
    /** Only these attributes of each item (a ProjectionExpression); the keys are always read. */
    fields?: readonly string[];
  }): Promise<T[]> {
    const pkName = opts.index ? 'gsi1pk' : 'pk';
    const skName = opts.index ? 'gsi1sk' : 'sk';
    const names: Record<string, string> = { '#pk': pkName, ...(opts.names ?? {}) };
    const fields = opts.fields && ['pk', 'sk', ...opts.fields];
    fields?.forEach((f, i) => {
      names[`#f${i}`] = f;
    });
    const values: Record<string, unknown> = { ':pk': opts.pk, ...(opts.values ?? {}) };
    let cond = '#pk = :pk';
    if (opts.prefix !== undefined) {
      names['#sk'] = skName;
      values[':prefix'] = opts.prefix;
      cond += ' AND begins_with(#sk, :prefix)';
    } else if (opts.between) {
      names['#sk'] = skName;
      values[':lo'] = opts.between[0];
      values[':hi'] = opts.between[1];
      cond += ' AND #sk BETWEEN :lo AND :hi';
    }
    const items: T[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const out = await documentClient().send('Query', {
        TableName: table(),
        IndexName: opts.index,
        KeyConditionExpression: cond,
        FilterExpression: opts.filter,
        ProjectionExpression: fields?.map((_, i) => `#f${i}`).join(', '),
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
        ScanIndexForward: !opts.newestFirst,
        ExclusiveStartKey: start,
        Limit: opts.limit && !opts.filter ? opts.limit - items.length : undefined,
        ConsistentRead: opts.index ? undefined : true,
      });
      items.push(...((out.Items ?? []) as T[]));
      start = out.LastEvaluatedKey;
    } while (start && (!opts.limit || items.length < opts.limit));
    return opts.limit ? items.slice(0, opts.limit) : items;
  },
};

export { isConditionFailure };
