/** Saved-query parameter definitions and the checking of values against them. */

export const PARAM_TYPES = ['string', 'number', 'integer', 'boolean', 'date', 'datetime'] as const;
export type ParamType = (typeof PARAM_TYPES)[number];

export interface ParamDef {
  name: string;
  type: ParamType;
  required: boolean;
  default?: string | number | boolean | null;
}

/** A field-level problem in the shape the validation middleware uses. */
export interface Issue {
  path: string;
  message: string;
  code: string;
}

/** Canonical form of a checked value: strings, numbers, booleans; dates as `YYYY-MM-DD`; date-times as UTC `Date`. */
export type Canonical = string | number | boolean | Date | null;

export const MAX_STRING_PARAM = 10_000;

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATETIME =
  /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?$/i;

const validDate = (y: number, m: number, d: number) => {
  const t = new Date(Date.UTC(y, m - 1, d));
  return t.getUTCFullYear() === y && t.getUTCMonth() === m - 1 && t.getUTCDate() === d;
};

/**
 * Checks one value against a type. Strict: numbers, integers and booleans must be JSON numbers and
 * booleans (not strings); dates are `YYYY-MM-DD`; date-times are ISO 8601 (`T` or space, optional
 * seconds and fraction, offset or `Z`; no offset means UTC).
 */
export function checkValue(
  type: ParamType,
  v: unknown,
): { ok: true; value: Canonical } | { ok: false; message: string } {
  switch (type) {
    case 'string':
      if (typeof v !== 'string') return { ok: false, message: 'must be a string' };
      if (v.length > MAX_STRING_PARAM)
        return { ok: false, message: `must be at most ${MAX_STRING_PARAM} characters` };
      return { ok: true, value: v };
    case 'number':
      if (typeof v !== 'number' || !Number.isFinite(v))
        return { ok: false, message: 'must be a finite number' };
      return { ok: true, value: v };
    case 'integer':
      if (typeof v !== 'number' || !Number.isSafeInteger(v))
        return { ok: false, message: 'must be an integer (within ±9007199254740991)' };
      return { ok: true, value: v };
    case 'boolean':
      if (typeof v !== 'boolean') return { ok: false, message: 'must be true or false' };
      return { ok: true, value: v };
    case 'date': {
      const m = typeof v === 'string' ? DATE.exec(v) : null;
      if (!m || !validDate(+m[1], +m[2], +m[3]))
        return { ok: false, message: 'must be a calendar date written YYYY-MM-DD' };
      return { ok: true, value: v as string };
    }
    case 'datetime': {
      const m = typeof v === 'string' ? DATETIME.exec(v) : null;
      if (!m || !validDate(+m[1], +m[2], +m[3]) || +m[4] > 23 || +m[5] > 59 || +(m[6] ?? 0) > 59)
        return { ok: false, message: 'must be an ISO 8601 date-time such as 2024-05-01T13:45:00Z' };
      let iso = `${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6] ?? '00'}${(m[7] ?? '').slice(0, 4)}`;
      const zone = m[8] ?? 'Z';
      iso +=
        zone.toUpperCase() === 'Z' ? 'Z' : zone.includes(':') ? zone : `${zone.slice(0, 3)}:${zone.slice(3)}`;
      const t = new Date(iso);
      if (Number.isNaN(t.getTime())) return { ok: false, message: 'must be a valid ISO 8601 date-time' };
      return { ok: true, value: t };
    }
  }
}

/**
 * Checks a run's `params` against the definitions: unknown names, missing required values and wrong
 * types are all reported (each with its path). A missing optional value takes the definition's
 * default, else null.
 */
export function resolveValues(
  defs: ParamDef[],
  params: Record<string, unknown>,
): { values: Map<string, Canonical>; issues: Issue[] } {
  const issues: Issue[] = [];
  const values = new Map<string, Canonical>();
  const known = new Set(defs.map((d) => d.name));
  for (const name of Object.keys(params))
    if (!known.has(name))
      issues.push({
        path: `body.params.${name}`,
        message: `Unknown parameter "${name}"; this query takes: ${[...known].join(', ') || 'no parameters'}.`,
        code: 'unknown_parameter',
      });
  for (const def of defs) {
    const given = Object.hasOwn(params, def.name) ? params[def.name] : undefined;
    const raw = given ?? def.default ?? null;
    if (raw === null) {
      if (def.required)
        issues.push({
          path: `body.params.${def.name}`,
          message: `Parameter "${def.name}" (${def.type}) is required.`,
          code: 'missing_parameter',
        });
      values.set(def.name, null);
      continue;
    }
    const r = checkValue(def.type, raw);
    if (!r.ok)
      issues.push({
        path: `body.params.${def.name}`,
        message: `Parameter "${def.name}" ${r.message}.`,
        code: 'invalid_type',
      });
    else values.set(def.name, r.value);
  }
  return { values, issues };
}
