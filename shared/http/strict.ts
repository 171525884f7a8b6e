/**
 * Strict request bodies and query strings, for every endpoint at once: a field that the endpoint's zod
 * schema does not define is an error naming it, never silently dropped (`parameters` sent where the field
 * is `params` must not run with NULLs). The schemas stay plain `z.object`s; this walks the request value
 * along its schema and reports each key the matching object schema has no property for. Objects that
 * declare their own rule for extra keys (strict, loose, a catchall) keep it. The OpenAPI document says
 * the same (`additionalProperties: false`, see `closeObjects`).
 */
import * as z from 'zod/mini';

type Def = Record<string, any> & { type: string };
const defOf = (s: z.core.$ZodType): Def => (s as unknown as { _zod: { def: Def } })._zod.def;
const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** Paths (`['body', 'parameters']`) of the fields in `value` that `schema` does not define. */
export function unknownFields(schema: z.core.$ZodType, value: unknown, path: string[]): string[][] {
  const def = defOf(schema);
  switch (def.type) {
    case 'object': {
      if (!isPlainObject(value)) return [];
      const shape = def.shape as Record<string, z.core.$ZodType>;
      const out: string[][] = [];
      for (const [key, v] of Object.entries(value)) {
        if (Object.hasOwn(shape, key)) out.push(...unknownFields(shape[key], v, [...path, key]));
        else if (def.catchall === undefined) out.push([...path, key]);
        else out.push(...unknownFields(def.catchall, v, [...path, key]));
      }
      return out;
    }
    case 'optional':
    case 'nullable':
    case 'default':
    case 'prefault':
    case 'nonoptional':
    case 'readonly':
    case 'catch':
      return value === undefined || value === null ? [] : unknownFields(def.innerType, value, path);
    case 'pipe':
      return unknownFields(def.in, value, path);
    case 'lazy':
      return unknownFields(def.getter(), value, path);
    case 'array':
      return Array.isArray(value)
        ? value.flatMap((v, i) => unknownFields(def.element, v, [...path, String(i)]))
        : [];
    case 'tuple':
      return Array.isArray(value)
        ? value.flatMap((v, i) => {
            const item = def.items[i] ?? def.rest;
            return item ? unknownFields(item, v, [...path, String(i)]) : [];
          })
        : [];
    case 'record':
      return isPlainObject(value)
        ? Object.entries(value).flatMap(([k, v]) => unknownFields(def.valueType, v, [...path, k]))
        : [];
    case 'intersection':
      // A key is unknown only when neither side defines it.
      return unknownToAll([def.left, def.right], value, path);
    case 'union': {
      // The option the value matches (a discriminated union picks by its key); when none matches (zod
      // names that problem too), the keys no option defines.
      const options = def.options as z.core.$ZodType[];
      const match = options.find((o) => z.safeParse(o, value).success);
      return match ? unknownFields(match, value, path) : unknownToAll(options, value, path);
    }
    default:
      return [];
  }
}

function unknownToAll(schemas: z.core.$ZodType[], value: unknown, path: string[]): string[][] {
  const [first, ...rest] = schemas.map((s) => unknownFields(s, value, path).map((p) => p.join('\u0000')));
  const others = rest.map((r) => new Set(r));
  return (first ?? []).filter((p) => others.every((o) => o.has(p))).map((p) => p.split('\u0000'));
}

/**
 * `z.toJSONSchema` override: every object the request schemas define says `additionalProperties: false`
 * (what the validation step enforces), unless it declares its own rule.
 */
export function closeObjects(ctx: { zodSchema: z.core.$ZodType; jsonSchema: Record<string, unknown> }) {
  const def = defOf(ctx.zodSchema);
  if (
    def.type === 'object' &&
    def.catchall === undefined &&
    ctx.jsonSchema.additionalProperties === undefined
  )
    ctx.jsonSchema.additionalProperties = false;
}
