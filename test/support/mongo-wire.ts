/**
 * A minimal MongoDB server speaking the real wire protocol (OP_MSG, plus OP_QUERY/OP_REPLY for a
 * legacy handshake) over TCP, with BSON from the `mongodb` package. It lets the real `mongodb`
 * driver run through our adapter without a MongoDB installation. It answers hello/isMaster, ping,
 * buildInfo, listCollections, find / aggregate / getMore / killCursors with scripted documents,
 * count, endSessions; refuses SASL authentication (code 18); and replies with scripted errors.
 * Every command received is recorded so tests can assert what the driver sent.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { BSON, type Document } from 'mongodb';

const OP_REPLY = 1;
const OP_QUERY = 2004;
const OP_MSG = 2013;

export interface MongoWireOptions {
  /** Documents per collection (the `$db` is ignored). */
  collections?: Record<string, Document[]>;
  /** Commands on these collections fail with the given error document. */
  errors?: Record<string, { code: number; codeName: string; errmsg: string }>;
  /** Views (listed with type "view"). */
  views?: string[];
  /** find / aggregate on these collections close the connection instead of answering. */
  drop?: string[];
  /** find / aggregate on these collections are never answered (the connection stays open). */
  hang?: string[];
}

/** Thrown by `handle` for a command that must not be answered. */
class NoReply extends Error {}

export interface MongoWireServer {
  port: number;
  url: string;
  /** Every command document received, in order. */
  commands: Document[];
  /** Closes the server and every open socket. */
  stop(): Promise<void>;
}

interface OpenCursor {
  ns: string;
  docs: Document[];
}

export async function startMongoWire(opts: MongoWireOptions = {}): Promise<MongoWireServer> {
  const collections = opts.collections ?? {};
  const commands: Document[] = [];
  const sockets = new Set<Socket>();
  const cursors = new Map<string, OpenCursor>();
  let nextCursor = 1000n;
  let connectionId = 0;

  const helloReply = () => ({
    helloOk: true,
    ismaster: true,
    isWritablePrimary: true,
    maxBsonObjectSize: 16 * 1024 * 1024,
    maxMessageSizeBytes: 48_000_000,
    maxWriteBatchSize: 100_000,
    localTime: new Date(),
    logicalSessionTimeoutMinutes: 30,
    connectionId: ++connectionId,
    minWireVersion: 0,
    maxWireVersion: 21,
    readOnly: false,
    ok: 1,
  });

  const batchOf = (
    ns: string,
    docs: Document[],
    batchSize: number,
    field: 'firstBatch' | 'nextBatch',
    id?: bigint,
  ) => {
    const batch = docs.slice(0, batchSize);
    const rest = docs.slice(batchSize);
    let cursorId = 0n;
    if (rest.length > 0) {
      cursorId = id ?? nextCursor++;
      cursors.set(String(cursorId), { ns, docs: rest });
    } else if (id !== undefined) cursors.delete(String(id));
    return { cursor: { id: BSON.Long.fromBigInt(cursorId), ns, [field]: batch }, ok: 1 };
  };

  const errorFor = (coll: string) => {
    const e = opts.errors?.[coll];
    return e ? { ok: 0, ...e } : undefined;
  };

  const applyPipeline = (docs: Document[], pipeline: Document[]) => {
    let out = docs;
    for (const stage of pipeline) {
      if (stage.$limit !== undefined) out = out.slice(0, Number(stage.$limit));
      if (stage.$sample !== undefined) out = out.slice(0, Number(stage.$sample.size));
      if (stage.$skip !== undefined) out = out.slice(Number(stage.$skip));
    }
    return out;
  };

  /** A scripted fault: `drop` throws (the socket is destroyed), `hang` leaves the command unanswered. */
  const fault = (coll: string) => {
    if (opts.drop?.includes(coll)) throw new Error(`dropping the connection on ${coll}`);
    if (opts.hang?.includes(coll)) throw new NoReply();
  };

  function handle(cmd: Document): Document {
    commands.push(cmd);
    const name = Object.keys(cmd)[0];
    const db = String(cmd.$db ?? 'admin');
    switch (name) {
      case 'hello':
      case 'isMaster':
      case 'ismaster': {
        const reply: Document = helloReply();
        if (cmd.saslSupportedMechs) reply.saslSupportedMechs = ['SCRAM-SHA-256', 'SCRAM-SHA-1'];
        return reply;
      }
      case 'ping':
      case 'endSessions':
        return { ok: 1 };
      case 'buildInfo':
      case 'buildinfo':
        return { version: '7.0.0-wire', versionArray: [7, 0, 0, 0], ok: 1 };
      case 'saslStart':
      case 'authenticate':
        return { ok: 0, errmsg: 'Authentication failed.', code: 18, codeName: 'AuthenticationFailed' };
      case 'listCollections': {
        const docs = [
          ...Object.keys(collections).map((n) => ({
            name: n,
            type: 'collection',
            options: {},
            info: { readOnly: false },
          })),
          ...(opts.views ?? []).map((n) => ({
            name: n,
            type: 'view',
            options: {},
            info: { readOnly: true },
          })),
          { name: 'system.views', type: 'collection', options: {}, info: { readOnly: false } },
        ];
        return batchOf(`${db}.$cmd.listCollections`, docs, 101, 'firstBatch');
      }
      case 'find': {
        const coll = String(cmd.find);
        fault(coll);
        const err = errorFor(coll);
        if (err) return err;
        let docs = collections[coll] ?? [];
        if (cmd.skip) docs = docs.slice(Number(cmd.skip));
        if (cmd.limit) docs = docs.slice(0, Number(cmd.limit));
        return batchOf(`${db}.${coll}`, docs, Number(cmd.batchSize ?? 101), 'firstBatch');
      }
      case 'aggregate': {
        const coll = String(cmd.aggregate);
        fault(coll);
        const err = errorFor(coll);
        if (err) return err;
        const docs = applyPipeline(collections[coll] ?? [], (cmd.pipeline as Document[]) ?? []);
        return batchOf(`${db}.${coll}`, docs, Number(cmd.cursor?.batchSize ?? 101), 'firstBatch');
      }
      case 'getMore': {
        const id = BigInt(String(cmd.getMore));
        const c = cursors.get(String(id));
        if (!c) return { ok: 0, errmsg: `cursor id ${id} not found`, code: 43, codeName: 'CursorNotFound' };
        return batchOf(c.ns, c.docs, Number(cmd.batchSize ?? 101), 'nextBatch', id);
      }
      case 'killCursors': {
        const ids = (cmd.cursors as unknown[]) ?? [];
        for (const id of ids) cursors.delete(String(id));
        return { cursorsKilled: ids, cursorsNotFound: [], cursorsAlive: [], cursorsUnknown: [], ok: 1 };
      }
      case 'count': {
        const coll = String(cmd.count);
        return errorFor(coll) ?? { n: (collections[coll] ?? []).length, ok: 1 };
      }
      default:
        return { ok: 0, errmsg: `no such command: '${name}'`, code: 59, codeName: 'CommandNotFound' };
    }
  }

  const header = (length: number, requestId: number, responseTo: number, opCode: number) => {
    const h = Buffer.alloc(16);
    h.writeInt32LE(length, 0);
    h.writeInt32LE(requestId, 4);
    h.writeInt32LE(responseTo, 8);
    h.writeInt32LE(opCode, 12);
    return h;
  };
  let requestIds = 1;

  function reply(socket: Socket, message: Buffer) {
    const requestId = message.readInt32LE(4);
    const opCode = message.readInt32LE(12);
    if (opCode === OP_MSG) {
      const flags = message.readUInt32LE(16);
      let at = 20;
      const end = message.length - (flags & 1 ? 4 : 0);
      let body: Document = {};
      const sequences: Record<string, Document[]> = {};
      while (at < end) {
        const kind = message[at++];
        const size = message.readInt32LE(at);
        if (kind === 0) {
          body = BSON.deserialize(message.subarray(at, at + size), {
            promoteLongs: false,
            promoteValues: true,
          });
          at += size;
        } else {
          const seqEnd = at + size;
          let p = at + 4;
          const zero = message.indexOf(0, p);
          const id = message.toString('utf8', p, zero);
          p = zero + 1;
          const docs: Document[] = [];
          while (p < seqEnd) {
            const len = message.readInt32LE(p);
            docs.push(BSON.deserialize(message.subarray(p, p + len)));
            p += len;
          }
          sequences[id] = docs;
          at = seqEnd;
        }
      }
      const out = BSON.serialize(handle({ ...body, ...sequences }));
      const payload = Buffer.concat([Buffer.alloc(4), Buffer.from([0]), out]);
      socket.write(Buffer.concat([header(16 + payload.length, requestIds++, requestId, OP_MSG), payload]));
      return;
    }
    if (opCode === OP_QUERY) {
      let at = 20;
      const zero = message.indexOf(0, at);
      at = zero + 1 + 8;
      const len = message.readInt32LE(at);
      const query = BSON.deserialize(message.subarray(at, at + len));
      const out = BSON.serialize(handle(query.$query ?? query));
      const body = Buffer.alloc(20);
      body.writeInt32LE(0, 0); // responseFlags
      body.writeBigInt64LE(0n, 4); // cursorID
      body.writeInt32LE(0, 12); // startingFrom
      body.writeInt32LE(1, 16); // numberReturned
      const payload = Buffer.concat([body, out]);
      socket.write(Buffer.concat([header(16 + payload.length, requestIds++, requestId, OP_REPLY), payload]));
      return;
    }
    socket.destroy();
  }

  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    let buffered = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      while (buffered.length >= 4) {
        const len = buffered.readInt32LE(0);
        if (buffered.length < len) break;
        const message = buffered.subarray(0, len);
        buffered = buffered.subarray(len);
        try {
          reply(socket, message);
        } catch (e) {
          if (!(e instanceof NoReply)) socket.destroy();
        }
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.address() as { port: number }).port;
  return {
    port,
    url: `mongodb://127.0.0.1:${port}`,
    commands,
    async stop() {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}
