import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { Socket } from 'node:net';
import { join } from 'node:path';

const tlsDir = join(import.meta.dirname, '..', 'fixtures', 'tls');

/**
 * The CA that signed the receivers' certificate (`receiver.test`, `*.receiver.test`). vitest.config.ts
 * puts it in NODE_EXTRA_CA_CERTS for every test process, so Node trusts receivers with the normal
 * TLS verification. Its private key was deleted after signing: nothing else can be signed with it.
 */
export const testCaPath = join(tlsDir, 'ca.pem');

export interface ReceivedRequest {
  method: string;
  /** Path with query string, as sent. */
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
  at: number;
}

export type ReceiverHandler = (req: ReceivedRequest, res: ServerResponse) => void | Promise<void>;

export interface HttpsReceiver {
  /** A hostname under `receiver.test` unique to this receiver, e.g. `r1a2b3.receiver.test`. */
  hostname: string;
  /** The loopback address it listens on, port 443 (each receiver gets its own 127.x.y.z). */
  ip: string;
  /** `https://<hostname>` (port 443). */
  url: string;
  /** `hostname=ip`, for LOUPE_OUTBOUND_TEST_HOSTS. */
  testHostEntry: string;
  /** Every request received, in order. */
  requests: ReceivedRequest[];
  /** TCP connections accepted (also those that never sent a request). */
  connections: number;
  /** Replace the handler (default: 200 `{"ok":true}`). */
  setHandler(h: ReceiverHandler): void;
  close(): Promise<void>;
}

const defaultHandler: ReceiverHandler = (_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end('{"ok":true}');
};

function randomLoopback(): string {
  const b = () => 1 + Math.floor(Math.random() * 253);
  return `127.${b()}.${b()}.${b()}`;
}

/**
 * A real HTTPS server on port 443 of a random loopback address (127.0.0.0/8 is all loopback on Linux,
 * so test files running in parallel never collide), with a certificate for `*.receiver.test` signed by
 * the test CA. Tests map the returned hostname to the address with LOUPE_OUTBOUND_TEST_HOSTS.
 */
export async function startHttpsReceiver(handler: ReceiverHandler = defaultHandler): Promise<HttpsReceiver> {
  const key = readFileSync(join(tlsDir, 'receiver-key.pem'));
  const cert = readFileSync(join(tlsDir, 'receiver-cert.pem'));
  let current = handler;
  const requests: ReceivedRequest[] = [];
  const sockets = new Set<Socket>();
  let connections = 0;
  const server: Server = createServer({ key, cert }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r: ReceivedRequest = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        at: Date.now(),
      };
      requests.push(r);
      Promise.resolve(current(r, res)).catch(() => {
        if (!res.headersSent) res.writeHead(500);
        res.end();
      });
    });
  });
  server.on('connection', (s: Socket) => {
    connections++;
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  let ip = '';
  for (let i = 0; ; i++) {
    ip = randomLoopback();
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(443, ip, () => {
          server.off('error', reject);
          resolve();
        });
      });
      break;
    } catch (e) {
      if (i > 20 || (e as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw e;
    }
  }
  const hostname = `r${Math.random().toString(36).slice(2, 10)}.receiver.test`;
  const receiver: HttpsReceiver = {
    hostname,
    ip,
    url: `https://${hostname}`,
    testHostEntry: `${hostname}=${ip}`,
    requests,
    get connections() {
      return connections;
    },
    setHandler(h) {
      current = h;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
  return receiver;
}
