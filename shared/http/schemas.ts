import * as z from 'zod';

/** Shared request schemas. */
export const PageQuery = z.object({
  page: z.coerce.number().int().min(1).default(1),
  pageSize: z.coerce.number().int().min(1).max(100).default(20),
});
export type PageQuery = z.infer<typeof PageQuery>;

export const IdParams = z.object({ id: z.string().min(1).max(200) });

export const Deleted = z.object({ deleted: z.literal(true) });

export const isoDateTime = () => z.iso.datetime({ offset: true });
