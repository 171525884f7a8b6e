// The baseline of bench/memory.ts: a bare node:http server that reads a JSON body and answers a small
// JSON envelope, the floor of what Node itself holds under the same requests.
import { createServer } from 'node:http';

const server = createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
    const out = JSON.stringify({ data: { columns: ['n'], rows: [{ n: body.sql }] }, error: null, meta: {} });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(out) });
    res.end(out);
  });
});
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  console.log(`bare server serving http://127.0.0.1:${server.address().port}`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
