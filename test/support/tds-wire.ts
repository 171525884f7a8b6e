/**
 * A minimal SQL Server speaking TDS 7.4 over TCP, enough for the real `mssql`/`tedious` client to
 * connect, log in, run SQL batches and sp_executesql RPCs, begin/rollback transactions, and cancel
 * (attention). Results are scripted per statement by `respond`. No TLS: PRELOGIN answers
 * ENCRYPT_NOT_SUP (or ENCRYPT_OFF when `encryption: 'OFF'`). Every request is recorded.
 */
import { createServer, type Server, type Socket } from 'node:net';

/** `nvarchar(max)`: sent as PLP (a total length, then chunks of at most 8,000 bytes, then a 0 terminator). */
export type TdsType =
  | 'int'
  | 'bigint'
  | 'bit'
  | 'nvarchar'
  | 'nvarchar(max)'
  | 'decimal'
  | 'datetime2'
  | 'varbinary';
export interface TdsColumn {
  name: string;
  type: TdsType;
  /** decimal: [precision, scale]; datetime2: scale. */
  precision?: number;
  scale?: number;
}
export type TdsResponse =
  | { columns: TdsColumn[]; rows: unknown[][] }
  | { error: { number: number; message: string; class?: number } }
  | { hang: true }
  /** Never answered, not even the cancel (attention): a server that stopped answering. */
  | { deaf: true }
  /** The connection is closed instead of an answer. */
  | { drop: true }
  /** A statement without a result set that changed this many rows (DONE with DONE_COUNT). */
  | { rowsAffected: number };

export interface TdsRequest {
  kind: 'batch' | 'rpc' | 'transaction' | 'attention' | 'login';
  sql?: string;
  /** RPC: sp_executesql parameter declarations, e.g. "@p1 int". */
  declarations?: string;
  params?: unknown[];
  transaction?: 'begin' | 'commit' | 'rollback';
  user?: string;
  database?: string;
  packetTypes?: number;
  /** The message's first packet carried RESETCONNECTION (0x08): the server resets the session first. */
  reset?: boolean;
}

export interface TdsWireOptions {
  users?: Record<string, string>;
  databases?: string[];
  encryption?: 'NOT_SUP' | 'OFF';
  respond?: (sql: string, params: unknown[], info: { reset: boolean }) => TdsResponse | undefined;
}

export interface TdsWireServer {
  port: number;
  requests: TdsRequest[];
  stop(): Promise<void>;
}

const ucs2 = (s: string) => Buffer.from(s, 'utf16le');
const bVarChar = (s: string) => Buffer.concat([Buffer.from([s.length]), ucs2(s)]);
const usVarChar = (s: string) => {
  const b = Buffer.alloc(2);
  b.writeUInt16LE(s.length);
  return Buffer.concat([b, ucs2(s)]);
};
const u16 = (n: number) => {
  const b = Buffer.alloc(2);
  b.writeUInt16LE(n);
  return b;
};
const u32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n);
  return b;
};
const COLLATION = Buffer.from([0x09, 0x04, 0xd0, 0x00, 0x34]);

const token = (type: number, body: Buffer) => Buffer.concat([Buffer.from([type]), u16(body.length), body]);
const done = (status: number, curCmd: number, rows: number, type = 0xfd) => {
  const b = Buffer.alloc(13);
  b[0] = type;
  b.writeUInt16LE(status, 1);
  b.writeUInt16LE(curCmd, 3);
  b.writeBigUInt64LE(BigInt(rows), 5);
  return b;
};
const errorToken = (number: number, message: string, cls = 16) =>
  token(
    0xaa,
    Buffer.concat([
      u32(number),
      Buffer.from([1, cls]),
      usVarChar(message),
      bVarChar('tds-wire'),
      bVarChar(''),
      u32(1),
    ]),
  );
const envChange = (type: number, value: Buffer, old: Buffer) =>
  token(0xe3, Buffer.concat([Buffer.from([type]), value, old]));
const bVarByte = (b: Buffer) => Buffer.concat([Buffer.from([b.length]), b]);

function typeInfo(c: TdsColumn): Buffer {
  switch (c.type) {
    case 'int':
      return Buffer.from([0x26, 4]);
    case 'bigint':
      return Buffer.from([0x26, 8]);
    case 'bit':
      return Buffer.from([0x68, 1]);
    case 'nvarchar':
      return Buffer.concat([Buffer.from([0xe7]), u16(8000), COLLATION]);
    case 'nvarchar(max)':
      return Buffer.concat([Buffer.from([0xe7]), u16(0xffff), COLLATION]);
    case 'decimal':
      return Buffer.from([0x6a, 17, c.precision ?? 38, c.scale ?? 0]);
    case 'datetime2':
      return Buffer.from([0x2a, c.scale ?? 7]);
    case 'varbinary':
      return Buffer.concat([Buffer.from([0xa5]), u16(8000)]);
  }
}

function encodeValue(c: TdsColumn, v: unknown): Buffer {
  const isNull = v === null || v === undefined;
  switch (c.type) {
    case 'int': {
      if (isNull) return Buffer.from([0]);
      const b = Buffer.alloc(5);
      b[0] = 4;
      b.writeInt32LE(Number(v), 1);
      return b;
    }
    case 'bigint': {
      if (isNull) return Buffer.from([0]);
      const b = Buffer.alloc(9);
      b[0] = 8;
      b.writeBigInt64LE(BigInt(v as string), 1);
      return b;
    }
    case 'bit':
      return isNull ? Buffer.from([0]) : Buffer.from([1, v ? 1 : 0]);
    case 'nvarchar':
      return isNull
        ? u16(0xffff)
        : Buffer.concat([u16(Buffer.byteLength(String(v), 'utf16le')), ucs2(String(v))]);
    case 'varbinary':
      return isNull ? u16(0xffff) : Buffer.concat([u16((v as Buffer).length), v as Buffer]);
    case 'nvarchar(max)': {
      const total = Buffer.alloc(8);
      if (isNull) {
        total.writeBigUInt64LE(0xffffffffffffffffn);
        return total;
      }
      const data = ucs2(String(v));
      total.writeBigUInt64LE(BigInt(data.length));
      const parts: Buffer[] = [total];
      for (let at = 0; at < data.length; at += 8000) {
        const chunk = data.subarray(at, at + 8000);
        parts.push(u32(chunk.length), chunk);
      }
      parts.push(u32(0));
      return Buffer.concat(parts);
    }
    case 'decimal': {
      if (isNull) return Buffer.from([0]);
      const scale = c.scale ?? 0;
      const [whole, frac = ''] = String(v).replace('-', '').split('.');
      const digits = BigInt(whole + frac.padEnd(scale, '0').slice(0, scale));
      const b = Buffer.alloc(18);
      b[0] = 17;
      b[1] = String(v).startsWith('-') ? 0 : 1;
      b.writeBigUInt64LE(digits & 0xffffffffffffffffn, 2);
      b.writeBigUInt64LE(digits >> 64n, 10);
      return b;
    }
    case 'datetime2': {
      if (isNull) return Buffer.from([0]);
      const scale = c.scale ?? 7;
      const d = new Date(String(v));
      const ms = d.getTime();
      const dayMs = 86_400_000;
      const days = Math.floor(ms / dayMs) + 719_162; // days from 0001-01-01 to 1970-01-01
      const timeUnits = (BigInt(ms - Math.floor(ms / dayMs) * dayMs) * 10n ** BigInt(scale)) / 1000n;
      const timeLen = scale <= 2 ? 3 : scale <= 4 ? 4 : 5;
      const b = Buffer.alloc(1 + timeLen + 3);
      b[0] = timeLen + 3;
      for (let i = 0; i < timeLen; i++) b[1 + i] = Number((timeUnits >> BigInt(8 * i)) & 0xffn);
      b.writeUIntLE(days, 1 + timeLen, 3);
      return b;
    }
  }
}

function resultTokens(r: { columns: TdsColumn[]; rows: unknown[][] }): Buffer {
  const meta = Buffer.concat([
    Buffer.from([0x81]),
    u16(r.columns.length),
    ...r.columns.map((c) => Buffer.concat([u32(0), u16(0x0009), typeInfo(c), bVarChar(c.name)])),
  ]);
  const rows = r.rows.map((row) =>
    Buffer.concat([Buffer.from([0xd1]), ...r.columns.map((c, i) => encodeValue(c, row[i]))]),
  );
  return Buffer.concat([meta, ...rows]);
}

/** Reads an RPC parameter value of the types tedious sends for our inputs (nvarchar, intn, bit). */
function readParam(buf: Buffer, at: number): { value: unknown; at: number } {
  const nameLen = buf[at];
  at += 1 + nameLen * 2 + 1; // name, status flags
  const type = buf[at++];
  if (type === 0xe7 || type === 0xef) {
    const maxLen = buf.readUInt16LE(at);
    at += 2 + 5;
    if (maxLen === 0xffff) {
      const total = buf.readBigUInt64LE(at);
      at += 8;
      if (total === 0xffffffffffffffffn) return { value: null, at };
      const parts: Buffer[] = [];
      for (;;) {
        const len = buf.readUInt32LE(at);
        at += 4;
        if (len === 0) break;
        parts.push(buf.subarray(at, at + len));
        at += len;
      }
      return { value: Buffer.concat(parts).toString('utf16le'), at };
    }
    const len = buf.readUInt16LE(at);
    at += 2;
    if (len === 0xffff) return { value: null, at };
    return { value: buf.toString('utf16le', at, at + len), at: at + len };
  }
  if (type === 0x26 || type === 0x68) {
    at++; // max length
    const len = buf[at++];
    if (len === 0) return { value: null, at };
    const value =
      len === 8
        ? buf.readBigInt64LE(at)
        : len === 4
          ? buf.readInt32LE(at)
          : len === 2
            ? buf.readInt16LE(at)
            : buf[at];
    return {
      value: type === 0x68 ? Boolean(value) : typeof value === 'bigint' ? value : Number(value),
      at: at + len,
    };
  }
  throw new Error(`tds-wire: unsupported parameter type 0x${type.toString(16)}`);
}

export async function startTdsWire(opts: TdsWireOptions = {}): Promise<TdsWireServer> {
  const requests: TdsRequest[] = [];
  const sockets = new Set<Socket>();
  let spid = 50;

  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    const sessionSpid = ++spid;
    let packetId = 1;
    let buffered = Buffer.alloc(0);
    let message: Buffer[] = [];
    let resetFlag = false;
    let hanging = false;
    let deaf = false;
    let database = 'master';

    const send = (type: number, payload: Buffer) => {
      const max = 4096 - 8;
      for (let at = 0; at < payload.length || at === 0; at += max) {
        const chunk = payload.subarray(at, at + max);
        const last = at + max >= payload.length;
        const h = Buffer.alloc(8);
        h[0] = type;
        h[1] = last ? 1 : 0;
        h.writeUInt16BE(chunk.length + 8, 2);
        h.writeUInt16BE(sessionSpid, 4);
        h[6] = packetId++ & 0xff;
        socket.write(Buffer.concat([h, chunk]));
        if (payload.length === 0) break;
      }
    };

    const answer = (sql: string, params: unknown[], rpc: boolean) => {
      const trimmed = sql.trim();
      let r = opts.respond?.(trimmed, params, { reset: resetFlag });
      if (!r && /^select 1;?$/i.test(trimmed)) r = { columns: [{ name: '', type: 'int' }], rows: [[1]] };
      if (r && 'hang' in r) {
        hanging = true;
        return;
      }
      if (r && 'deaf' in r) {
        deaf = true;
        return;
      }
      if (r && 'drop' in r) {
        socket.destroy();
        return;
      }
      const end = rpc
        ? (status: number, count: number) =>
            Buffer.concat([
              done(status, 0xc1, count, 0xff),
              Buffer.from([0x79]),
              u32(0),
              done(0, 0xe0, 0, 0xfe),
            ])
        : (status: number, count: number) => done(status, 0xc1, count);
      if (!r) return send(0x04, end(0, 0));
      if ('rowsAffected' in r) return send(0x04, end(0x0010, r.rowsAffected));
      if ('error' in r)
        return send(
          0x04,
          Buffer.concat([errorToken(r.error.number, r.error.message, r.error.class), end(0x0002, 0)]),
        );
      send(0x04, Buffer.concat([resultTokens(r), end(0x0010, r.rows.length)]));
    };

    const handle = (type: number, payload: Buffer) => {
      if (type === 0x12) {
        // PRELOGIN: VERSION, ENCRYPTION, INSTOPT, THREADID, MARS
        const data = [
          Buffer.from([16, 0, 0x0f, 0xa0, 0, 0]),
          Buffer.from([opts.encryption === 'OFF' ? 0 : 2]),
          Buffer.from([0]),
          u32(sessionSpid),
          Buffer.from([0]),
        ];
        let offset = data.length * 5 + 1;
        const table: Buffer[] = [];
        data.forEach((d, i) => {
          const e = Buffer.alloc(5);
          e[0] = i;
          e.writeUInt16BE(offset, 1);
          e.writeUInt16BE(d.length, 3);
          table.push(e);
          offset += d.length;
        });
        send(0x04, Buffer.concat([...table, Buffer.from([0xff]), ...data]));
        return;
      }
      if (type === 0x10) {
        const str = (at: number) => {
          const off = payload.readUInt16LE(at);
          const len = payload.readUInt16LE(at + 2);
          return payload.subarray(off, off + len * 2);
        };
        const user = str(40).toString('utf16le');
        const password = Buffer.from(
          str(44).map((b) => {
            const x = b ^ 0xa5;
            return ((x & 0x0f) << 4) | (x >> 4);
          }),
        ).toString('utf16le');
        const db = str(68).toString('utf16le') || 'master';
        requests.push({ kind: 'login', user, database: db });
        if (opts.users && opts.users[user] !== password) {
          send(
            0x04,
            Buffer.concat([errorToken(18456, `Login failed for user '${user}'.`, 14), done(0x0002, 0, 0)]),
          );
          return;
        }
        if (opts.databases && !opts.databases.includes(db)) {
          send(
            0x04,
            Buffer.concat([
              errorToken(4060, `Cannot open database "${db}" requested by the login. The login failed.`, 11),
              done(0x0002, 0, 0),
            ]),
          );
          return;
        }
        database = db;
        const prog = 'Microsoft SQL Server';
        const ack = token(
          0xad,
          Buffer.concat([
            Buffer.from([1]),
            Buffer.from([0x74, 0, 0, 4]),
            bVarChar(prog),
            Buffer.from([16, 0, 0x0f, 0xa0]),
          ]),
        );
        send(
          0x04,
          Buffer.concat([
            envChange(1, bVarChar(database), bVarChar('master')),
            envChange(7, bVarByte(COLLATION), Buffer.from([0])),
            ack,
            envChange(4, bVarChar('4096'), bVarChar('4096')),
            done(0, 0, 0),
          ]),
        );
        return;
      }
      if (type === 0x06) {
        requests.push({ kind: 'attention' });
        if (deaf) return;
        // A request still running gets its response ended first; the acknowledgement (DONE_ATTN)
        // is the next message, which the client waits for before the connection is usable again.
        if (hanging) send(0x04, done(0, 0, 0));
        hanging = false;
        send(0x04, done(0x0020, 0, 0));
        return;
      }
      if (hanging || deaf) return;
      const headers = payload.readUInt32LE(0);
      const body = payload.subarray(headers);
      if (type === 0x01) {
        const sql = body.toString('utf16le');
        requests.push({ kind: 'batch', sql, ...(resetFlag ? { reset: true } : {}) });
        answer(sql, [], false);
        return;
      }
      if (type === 0x0e) {
        const kind = body.readUInt16LE(0);
        const descriptor = Buffer.from([1, 0, 0, 0, 0, 0, 0, 0]);
        if (kind === 5) {
          requests.push({ kind: 'transaction', transaction: 'begin' });
          send(0x04, Buffer.concat([envChange(8, bVarByte(descriptor), Buffer.from([0])), done(0, 0, 0)]));
        } else {
          const t = kind === 7 ? 'commit' : 'rollback';
          requests.push({ kind: 'transaction', transaction: t });
          send(
            0x04,
            Buffer.concat([
              envChange(kind === 7 ? 9 : 10, Buffer.from([0]), bVarByte(descriptor)),
              done(0, 0, 0),
            ]),
          );
        }
        return;
      }
      if (type === 0x03) {
        let at = 0;
        if (body.readUInt16LE(0) === 0xffff) at = 4;
        else at = 2 + body.readUInt16LE(0) * 2;
        at += 2; // option flags
        const values: unknown[] = [];
        while (at < body.length) {
          const r = readParam(body, at);
          values.push(r.value);
          at = r.at;
        }
        const [sql, declarations, ...params] = values as [string, string, ...unknown[]];
        requests.push({ kind: 'rpc', sql, declarations, params });
        answer(String(sql), params, true);
        return;
      }
      send(
        0x04,
        Buffer.concat([errorToken(0, `tds-wire: unsupported packet type ${type}`), done(0x0002, 0, 0)]),
      );
    };

    socket.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      while (buffered.length >= 8) {
        const len = buffered.readUInt16BE(2);
        if (buffered.length < len) break;
        const type = buffered[0];
        const status = buffered[1];
        if (message.length === 0) resetFlag = (status & 0x08) !== 0;
        message.push(buffered.subarray(8, len));
        buffered = buffered.subarray(len);
        if (status & 1) {
          const payload = Buffer.concat(message);
          message = [];
          try {
            handle(type, payload);
          } catch {
            socket.destroy();
          }
        }
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    port: (server.address() as { port: number }).port,
    requests,
    async stop() {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}
