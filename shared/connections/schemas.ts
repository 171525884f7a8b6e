import * as z from 'zod/mini';
import { once } from '../http/endpoint';

/**
 * Schemas other capabilities share with Connections (approvals, chat, dashboards, saved queries): a small
 * module of their own, so that importing them does not build every Connections schema at start.
 */

export const DB_TYPES = ['POSTGRES', 'MYSQL', 'MARIADB', 'MSSQL', 'MONGODB', 'SQLITE'] as const;
export const DbTypeSchema = z.enum(DB_TYPES);

/** A query's result as the API returns it (documentation: built with the OpenAPI document). */
export const QueryResult = once(() =>
  z.object({
    columns: z.array(z.string()),
    rows: z.array(z.record(z.string(), z.unknown())),
    rowCount: z.number().check(z.int()),
    executionTime: z.number(),
    truncated: z.optional(z.boolean()),
  }),
);
