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

/** The longest wire message (a row) a read accepts: one value at the bound plus the row's framing. */
export const MESSAGE_LIMIT_BYTES = VALUE_LIMIT_BYTES + 64 * 1024;

interface Readable {
  emit(event: string | symbol, ...args: unknown[]): boolean;
  destroy(error?: Error): unknown;
}

/**
 * Watches the PostgreSQL backend messages arriving on a connected client's stream (plain or TLS, after
 * start-up, so that chunks begin at a message boundary): a message whose length header says it is longer
 * than `limit` destroys the stream with VALUE_TOO_LARGE before its body is read, so the client never
 * buffers it (the server's backend stops when the socket closes). Each message is a type byte and a
 * 4-byte big-endian length that counts itself.
 */
export function limitPostgresMessages(stream: Readable, limit = MESSAGE_LIMIT_BYTES): void {
  const header = Buffer.alloc(5);
  let have = 0; // bytes of the current header read so far
  let skip = 0; // body bytes of the current message still to pass
  const emit = stream.emit;
  stream.emit = function (this: Readable, event: string | symbol, ...args: unknown[]) {
    if (event === 'data' && Buffer.isBuffer(args[0])) {
      const chunk = args[0];
      let i = 0;
      while (i < chunk.length) {
        if (skip > 0) {
          const n = Math.min(skip, chunk.length - i);
          skip -= n;
          i += n;
          continue;
        }
        const n = Math.min(5 - have, chunk.length - i);
        chunk.copy(header, have, i, i + n);
        have += n;
        i += n;
        if (have < 5) break;
        have = 0;
        const length = header.readUInt32BE(1);
        if (length - 4 > limit) {
          stream.destroy(valueTooLarge());
          return false;
        }
        skip = length - 4;
      }
    }
    return emit.call(this, event, ...args);
  } as Readable['emit'];
}
