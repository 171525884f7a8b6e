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

/** What a read can ask of the watcher on its connection's stream (limitPostgresMessages). */
export interface PostgresMessageWatch {
  /**
   * Until the next ReadyForQuery, DataRow messages whose type byte arrives from now on are dropped
   * before the client parses them (the read has all the rows it can keep). At most `budgetBytes` of
   * them: at the header of the DataRow that would pass the budget, `over()` is called once and nothing
   * more is passed on (the caller ends the connection; the server stops at its next write).
   */
  dropRows(budgetBytes: number, over: () => void): void;
}

const DATA_ROW = 0x44; // 'D'
const READY_FOR_QUERY = 0x5a; // 'Z'

/**
 * Watches the PostgreSQL backend messages arriving on a connected client's stream (plain or TLS, after
 * start-up, so that chunks begin at a message boundary): a message whose length header says it is longer
 * than `limit` destroys the stream with VALUE_TOO_LARGE before its body is read, so the client never
 * buffers it (the server's backend stops when the socket closes). Each message is a type byte and a
 * 4-byte big-endian length that counts itself. Returns the watch through which a read that is full
 * drops the rest of its rows unparsed (`dropRows`).
 */
export function limitPostgresMessages(stream: Readable, limit = MESSAGE_LIMIT_BYTES): PostgresMessageWatch {
  const header = Buffer.alloc(5);
  let have = 0; // bytes of the current header read so far
  let skip = 0; // body bytes of the current message still to pass
  let dropping = false; // DataRows are being dropped (until the next ReadyForQuery)
  let dropThis = false; // the current message is a dropped DataRow
  let budget = 0; // dropped bytes still allowed
  let over: (() => void) | undefined;
  const emit = stream.emit;
  stream.emit = function (this: Readable, event: string | symbol, ...args: unknown[]) {
    if (event !== 'data' || !Buffer.isBuffer(args[0])) return emit.call(this, event, ...args);
    const chunk = args[0];
    // Byte ranges of this chunk to pass on, as [start, end) pairs, and the start of the current kept run
    // (-1 inside a dropped DataRow). Mid-message at the chunk's start, the message's fate carries over.
    const kept: number[] = [];
    let from = (have > 0 || skip > 0) && dropThis ? -1 : 0;
    let i = 0;
    while (i < chunk.length) {
      if (skip > 0) {
        const n = Math.min(skip, chunk.length - i);
        skip -= n;
        i += n;
        continue;
      }
      if (have === 0) {
        // A message starts here: its type byte decides whether it is passed on.
        const type = chunk[i];
        if (type === READY_FOR_QUERY) dropping = false;
        dropThis = dropping && type === DATA_ROW;
        if (dropThis && from >= 0) {
          if (i > from) kept.push(from, i);
          from = -1;
        } else if (!dropThis && from < 0) from = i;
      }
      const n = Math.min(5 - have, chunk.length - i);
      chunk.copy(header, have, i, i + n);
      have += n;
      i += n;
      if (have < 5) break;
      have = 0;
      const length = header.readUInt32BE(1);
      if (dropThis) {
        budget -= length + 1;
        if (budget < 0) {
          const call = over;
          over = undefined;
          dropping = false;
          dropThis = false;
          call?.();
          return false;
        }
      } else if (length - 4 > limit) {
        stream.destroy(valueTooLarge());
        return false;
      }
      skip = length - 4;
    }
    if (from === 0 && kept.length === 0) return emit.call(this, event, chunk);
    if (from >= 0 && chunk.length > from) kept.push(from, chunk.length);
    if (kept.length === 0) return true;
    const parts: Buffer[] = [];
    for (let k = 0; k < kept.length; k += 2) parts.push(chunk.subarray(kept[k], kept[k + 1]));
    return emit.call(this, event, parts.length === 1 ? parts[0] : Buffer.concat(parts));
  } as Readable['emit'];
  return {
    dropRows(budgetBytes, onOver) {
      dropping = true;
      budget = budgetBytes;
      over = onOver;
    },
  };
}

interface MysqlConnection {
  packetParser: { execute(chunk: Buffer): unknown };
  stream?: { destroy(error?: Error): unknown };
}

/** The largest MySQL packet; a logical packet this long continues in the next one. */
const MYSQL_MAX_PACKET = 0xffffff;

/**
 * Watches the MySQL/MariaDB packets a connection receives (plain or TLS: mysql2 hands both to its packet
 * parser, which this wraps): a logical packet (a row; packets of 16 MiB − 1 bytes continue in the next)
 * longer than `limit` ends the connection with VALUE_TOO_LARGE at the header that passes the limit,
 * before mysql2 buffers the rest. Each packet is a 3-byte little-endian length, a sequence byte and the
 * payload. Installed on a connected connection (after the handshake), at a packet boundary.
 */
export function limitMysqlPackets(connection: MysqlConnection, limit = MESSAGE_LIMIT_BYTES): void {
  const parser = connection.packetParser;
  const header = Buffer.alloc(4);
  let have = 0; // header bytes of the current packet read so far
  let skip = 0; // payload bytes of the current packet still to pass
  let logical = 0; // bytes of the logical packet so far (continued packets)
  let failed = false;
  connection.packetParser = {
    execute(chunk: Buffer) {
      if (failed) return;
      let i = 0;
      while (i < chunk.length) {
        if (skip > 0) {
          const n = Math.min(skip, chunk.length - i);
          skip -= n;
          i += n;
          continue;
        }
        const n = Math.min(4 - have, chunk.length - i);
        chunk.copy(header, have, i, i + n);
        have += n;
        i += n;
        if (have < 4) break;
        have = 0;
        const length = header.readUIntLE(0, 3);
        logical += length;
        if (logical > limit) {
          failed = true;
          connection.stream?.destroy(valueTooLarge());
          return;
        }
        if (length < MYSQL_MAX_PACKET) logical = 0;
        skip = length;
      }
      return parser.execute(chunk);
    },
  };
}
