/**
 * The memory one read may take, per engine, and the errors a read gets when it would take more. The
 * result cap (5 MiB of JSON, run.ts) bounds what is returned; these bound what is built or received on
 * the way: a single value longer than VALUE_LIMIT_BYTES is refused by the engine (SQLite) or by the wire
 * reader before it is buffered (PostgreSQL, MySQL/MariaDB), so no read holds more than about that much of
 * one value in the service's memory.
 */
import { AppError } from '../../platform/errors';

/** The longest single value (string or BLOB) one read may build or receive: 8 MiB. */
export const VALUE_LIMIT_BYTES = 8 * 1024 * 1024;

const mib = (n: number) => `${Math.round(n / 1024 / 1024)} MiB`;

/** 422 VALUE_TOO_LARGE: one value of the read would be longer than the service's per-value bound. */
export function valueTooLarge(limitBytes = VALUE_LIMIT_BYTES): AppError {
  return new AppError(
    422,
    'VALUE_TOO_LARGE',
    `A value in this read is longer than ${mib(limitBytes)}, the longest string or binary value one read may build or return. Select a part of it (substr, left, LIMIT) or compute on the database (length, aggregates).`,
    { limitBytes },
  );
}

/** 422 QUERY_MEMORY_LIMIT: the engine ran out of the memory the service allows one read. */
export function memoryLimit(limitBytes: number): AppError {
  return new AppError(
    422,
    'QUERY_MEMORY_LIMIT',
    `This read needs more than ${mib(limitBytes)} of working memory, the bound for one read. Narrow it (filters, LIMIT, fewer or smaller columns) or aggregate.`,
    { limitBytes },
  );
}
