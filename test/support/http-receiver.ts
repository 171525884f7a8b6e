import { createServer } from 'node:http';
import type { ReceivedRequest } from './https-receiver';

export interface HttpReceiver {
  /** `http://127.0.0.1:<port>` */
  url: string;
  port: number;
  requests: ReceivedRequest[];
  /** TCP connections accepted. */
  connections: number;
  close(): Promise<void>;
}

/**
 * A plain HTTP server on 127.0.0.1 and a free port, answering 200 `{"ok":true}`: the development
 * receiver that LOUPE_DEV_ALLOW_LOOPBACK_HTTP admits (docs/guides/event-webhooks.md shows the same).
 */
export async function startHttpReceiver(): Promise<HttpReceiver> {
  const requests: ReceivedRequest[] = [];
  let connections = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      requests.push({
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        at: Date.now(),
      });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"ok":true}');
    });
  });
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    get connections() {
      return connections;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
