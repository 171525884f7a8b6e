import * as z from 'zod/mini';

/** Shared request schemas. */
export const PageQuery = z.object({
  page: z._default(z.coerce.number().check(z.int(), z.gte(1)), 1),
  pageSize: z._default(z.coerce.number().check(z.int(), z.gte(1), z.lte(100)), 20),
});
export type PageQuery = z.infer<typeof PageQuery>;

export const IdParams = z.object({ id: z.string().check(z.minLength(1), z.maxLength(200)) });

export const Deleted = z.object({ deleted: z.literal(true) });

export const isoDateTime = () => z.iso.datetime({ offset: true });

/**
 * A copy of `schema` with its description in zod's global registry, where the OpenAPI document reads it:
 * what classic zod's `.describe()` did (zod/mini has no methods beyond `check`, `register` and parsing).
 */
export function describe<T extends z.core.$ZodType>(schema: T, description: string): T {
  const copy = z.clone(schema);
  z.globalRegistry.add(copy, { description });
  return copy;
}
