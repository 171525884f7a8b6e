// Load clients for bench/load.ts, in a process of their own so that they do not share the service's
// thread. `node bench/load-client.mjs '<json options>'` runs `clients` concurrent loops for `seconds`
// and prints one JSON line: requests, errors (with the first few causes), latency percentiles and this
// process's CPU time.
//   mode "api": POST <url> with <body> and the bearer <key> over keep-alive HTTP/1.1 (one socket per client)
//   mode "pg":  the same SQL on a bare pg.Pool (<pg> connection options, <poolSize> connections), then
//               JSON.stringify(rows), as the API does with its answer
import { Agent, request } from 'node:http';
import pg from 'pg';

const opts = JSON.parse(process.argv[2] ?? '{}');
const { mode, clients = 32, seconds = 15, warmupSeconds = 1 } = opts;

function apiCall(agent) {
  const payload = JSON.stringify(opts.body);
  const url = new URL(opts.url);
  return () =>
    new Promise((resolve) => {
      const req = request(
        {
          agent,
          host: url.hostname,
          port: url.port,
          method: 'POST',
          path: url.pathname,
          headers: {
            authorization: `Bearer ${opts.key}`,
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(payload),
          },
        },
        (res) => {
          const chunks = [];
          res.on('data', (c) => chunks.push(c));
          res.on('end', () => {
            const status = res.statusCode ?? 0;
            resolve(
              status === 200
                ? null
                : `HTTP ${status}: ${Buffer.concat(chunks).toString('utf8').slice(0, 200)}`,
            );
          });
          res.on('error', (e) => resolve(e.message));
        },
      );
      req.on('error', (e) => resolve(e.message));
      req.end(payload);
    });
}

function pgCall(pool) {
  return async () => {
    try {
      const r = await pool.query(opts.sql);
      JSON.stringify(r.rows);
      return null;
    } catch (e) {
      return e.message;
    }
  };
}

const agent = new Agent({ keepAlive: true, maxSockets: clients });
const pool = mode === 'pg' ? new pg.Pool({ ...opts.pg, max: opts.poolSize ?? 3 }) : undefined;
const call = mode === 'pg' ? pgCall(pool) : apiCall(agent);

const latencies = [];
const causes = new Map();
let errors = 0;
let measuring = false;
let stop = false;

async function loop() {
  while (!stop) {
    const started = performance.now();
    const error = await call();
    const took = performance.now() - started;
    if (!measuring) continue;
    if (error) {
      errors++;
      causes.set(error, (causes.get(error) ?? 0) + 1);
    } else latencies.push(took);
  }
}

const loops = Array.from({ length: clients }, loop);
await new Promise((r) => setTimeout(r, warmupSeconds * 1000));
measuring = true;
const cpu0 = process.cpuUsage();
const t0 = performance.now();
await new Promise((r) => setTimeout(r, seconds * 1000));
measuring = false;
const elapsed = (performance.now() - t0) / 1000;
const cpu = process.cpuUsage(cpu0);
stop = true;
await Promise.all(loops);
agent.destroy();
await pool?.end();

latencies.sort((a, b) => a - b);
const pct = (p) =>
  latencies.length ? latencies[Math.min(latencies.length - 1, Math.ceil(latencies.length * p) - 1)] : NaN;
process.stdout.write(
  `${JSON.stringify({
    mode,
    clients,
    seconds: elapsed,
    ok: latencies.length,
    errors,
    causes: [...causes.entries()].slice(0, 5),
    perSecond: latencies.length / elapsed,
    p50: pct(0.5),
    p99: pct(0.99),
    cpuMs: (cpu.user + cpu.system) / 1000,
  })}\n`,
);
