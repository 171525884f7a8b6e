import { MAX_JSON_DEPTH, nestedDeeperThan } from '../platform/json-depth';
import { driverValue } from './bind';
import type { ScanProblem } from './tokenize';
import type { Canonical, ParamDef } from './values';

const WHOLE = /^\{\{\s*([A-Za-z_][A-Za-z0-9_]{0,62})\s*\}\}$/;
const ANY = /\{\{/;

export interface MongoScan {
  /** Placeholder names in document order (a name may repeat). */
  names: string[];
  problems: ScanProblem[];
  /** Set when the text is not JSON. */
  invalidJson?: string;
}

/**
 * Finds placeholders in a MongoDB JSON query. A placeholder must be a whole JSON string value
 * (`"{{name}}"`); a placeholder inside a longer string or in a key is a problem, because it could
 * only be filled by splicing text.
 */
export function scanMongo(text: string): MongoScan {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    return { names: [], problems: [], invalidJson: (e as Error).message };
  }
  const names: string[] = [];
  const problems: ScanProblem[] = [];
  if (nestedDeeperThan(doc))
    return {
      names,
      problems: [{ index: 0, message: `The query is nested more than ${MAX_JSON_DEPTH} levels deep.` }],
    };
  const walk = (v: unknown, where: string) => {
    if (typeof v === 'string') {
      const m = WHOLE.exec(v);
      if (m) names.push(m[1]);
      else if (ANY.test(v))
        problems.push({
          index: 0,
          message: `At ${where || '(root)'}: a placeholder must be a whole JSON string value such as "{{name}}".`,
        });
    } else if (Array.isArray(v))
      v.forEach((x, i) => {
        walk(x, `${where}[${i}]`);
      });
    else if (v && typeof v === 'object')
      for (const [k, x] of Object.entries(v)) {
        if (ANY.test(k))
          problems.push({
            index: 0,
            message: `At ${where || '(root)'}: placeholders are not allowed in keys ("${k}").`,
          });
        walk(x, where ? `${where}.${k}` : k);
      }
  };
  walk(doc, '');
  return { names, problems };
}

/**
 * Replaces each `"{{name}}"` string value with the typed JSON value (numbers stay numbers, booleans
 * booleans, null null; dates and date-times become Extended JSON `{"$date": …}`). The query is
 * rebuilt as a value tree and serialized, so a value can never change the query's structure.
 */
export function bindMongo(text: string, defs: ParamDef[], values: ReadonlyMap<string, Canonical>): string {
  const types = new Map(defs.map((d) => [d.name, d.type]));
  const doc = JSON.parse(text) as unknown;
  // Saved texts passed scanMongo (bounded depth) when saved; checked again before the recursive rebuild.
  if (nestedDeeperThan(doc)) throw new Error(`The query is nested more than ${MAX_JSON_DEPTH} levels deep.`);
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') {
      const m = WHOLE.exec(v);
      if (!m) return v;
      const type = types.get(m[1]);
      if (!type) throw new Error(`No definition for placeholder ${m[1]}`);
      return driverValue('MONGODB', type, values.get(m[1]) ?? null);
    }
    if (Array.isArray(v)) return v.map(walk);
    if (v && typeof v === 'object')
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]));
    return v;
  };
  return JSON.stringify(walk(doc));
}
