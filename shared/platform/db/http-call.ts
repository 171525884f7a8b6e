import type { Agent, IncomingHttpHeaders } from 'node:http';
import type { CallMetadata, StoreAnswer, StoreCall } from './document';
import { type Credentials, signRequest } from './sigv4';

/**
 * DynamoDB's JSON protocol over HTTP(S), signed with Signature Version 4: the transport of every
 * function in AWS (and of the local runtime when it talks to a store endpoint). It does what the AWS
 * SDK's DynamoDB client did for the service, without its middleware stack (see README, "Where the
 * chosen parts were changed"): keep-alive connections, a bounded number of attempts with exponential
 * backoff and full jitter for network errors, 5xx and throttling answers, and clock-skew correction.
 */
export interface HttpCallOptions {
  /** `https://dynamodb.<region>.amazonaws.com` or a local endpoint. */
  endpoint: string;
  region: string;
  credentials: () => Promise<Credentials>;
  /** Attempts per call, the first included (the SDK's default: 3). */
  maxAttempts?: number;
  /** Time to wait for the connection (and TLS) to be established. */
  connectTimeoutMs?: number;
  /** Time the socket may stay silent while a request is under way. */
  idleTimeoutMs?: number;
  /** Retry waits; tests replace it. */
  sleep?: (ms: number) => Promise<void>;
}

const RETRYABLE_TYPES = new Set([
  'ThrottlingException',
  'ProvisionedThroughputExceededException',
  'RequestLimitExceeded',
  'RequestThrottledException',
  'InternalServerError',
  'ServiceUnavailable',
  'ServiceUnavailableException',
  'LimitExceededException',
  'TransactionInProgressException',
]);
const THROTTLING_TYPES = new Set([
  'ThrottlingException',
  'ProvisionedThroughputExceededException',
  'RequestLimitExceeded',
  'RequestThrottledException',
  'LimitExceededException',
]);
const CLOCK_SKEW_TYPES = new Set([
  'InvalidSignatureException',
  'RequestTimeTooSkewed',
  'RequestExpired',
  'RequestInTheFuture',
  'SignatureDoesNotMatch',
]);
const RETRYABLE_NETWORK_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'EPIPE',
  'ETIMEDOUT',
  'EAI_AGAIN',
  'ENOTFOUND',
  'ENETUNREACH',
  'EHOSTUNREACH',
  'ECONNABORTED',
]);

/** The SDK's standard retry strategy: full jitter over base × 2^attempt, at most 20 s. */
export function backoffMs(attempt: number, throttled: boolean, random = Math.random): number {
  const base = throttled ? 500 : 100;
  return Math.floor(random() * Math.min(20_000, base * 2 ** attempt));
}

interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
}

export function httpStoreCall(opts: HttpCallOptions): StoreCall {
  const url = new URL(opts.endpoint);
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new Error(`DynamoDB endpoint must be http(s): ${opts.endpoint}`);
  const secure = url.protocol === 'https:';
  // Only the module the endpoint needs is loaded (node:https brings TLS).
  const mod = process.getBuiltinModule(secure ? 'node:https' : 'node:http') as typeof import('node:https');
  // Reused connections (the SDK's default maxSockets is 50): a new TCP and TLS connection per call
  // would cost more than the call.
  const agent: Agent = new mod.Agent({ keepAlive: true, maxSockets: 50 });
  const maxAttempts = opts.maxAttempts ?? 3;
  const sleep = opts.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const connectTimeoutMs = opts.connectTimeoutMs ?? 5_000;
  const idleTimeoutMs = opts.idleTimeoutMs ?? 30_000;
  const path = url.pathname || '/';
  let skewMs = 0;

  const post = (headers: Record<string, string>, body: string) =>
    new Promise<Reply>((resolve, reject) => {
      const req = mod.request(
        {
          agent,
          protocol: url.protocol,
          hostname: url.hostname.replace(/^\[|\]$/g, ''),
          port: url.port || undefined,
          path,
          method: 'POST',
          headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('error', reject);
          res.on('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              headers: res.headers,
              text: Buffer.concat(chunks).toString('utf8'),
            }),
          );
        },
      );
      const fail = (message: string, code: string) =>
        req.destroy(Object.assign(new Error(message), { name: 'TimeoutError', code }));
      const connectTimer = setTimeout(
        () => fail(`DynamoDB connection not established within ${connectTimeoutMs} ms`, 'ETIMEDOUT'),
        connectTimeoutMs,
      );
      req.on('socket', (socket) => {
        if (!socket.connecting) clearTimeout(connectTimer);
        else socket.once(secure ? 'secureConnect' : 'connect', () => clearTimeout(connectTimer));
      });
      req.setTimeout(idleTimeoutMs, () =>
        fail(`DynamoDB answered nothing for ${idleTimeoutMs} ms`, 'ETIMEDOUT'),
      );
      req.on('error', (e) => {
        clearTimeout(connectTimer);
        reject(e);
      });
      req.on('close', () => clearTimeout(connectTimer));
      req.end(body);
    });

  return async (operation, input) => {
    const body = JSON.stringify(input);
    let totalRetryDelay = 0;
    for (let attempt = 1; ; attempt++) {
      const metadata = (status: number, reply?: Reply): Partial<CallMetadata> => ({
        httpStatusCode: status,
        requestId: header(reply?.headers, 'x-amzn-requestid'),
        attempts: attempt,
        totalRetryDelay,
      });
      const headers = signRequest({
        host: url.host,
        path,
        headers: {
          'content-type': 'application/x-amz-json-1.0',
          'x-amz-target': `DynamoDB_20120810.${operation}`,
        },
        body,
        region: opts.region,
        service: 'dynamodb',
        credentials: await opts.credentials(),
        date: new Date(Date.now() + skewMs),
      });
      let reply: Reply;
      try {
        reply = await post(headers, body);
      } catch (e) {
        const code = (e as { code?: string }).code ?? '';
        const retryable =
          RETRYABLE_NETWORK_CODES.has(code) || /socket hang up/i.test(String((e as Error).message));
        if (!retryable || attempt >= maxAttempts) {
          Object.assign(e as object, { $metadata: metadata(0) });
          throw e;
        }
        const wait = backoffMs(attempt, false);
        totalRetryDelay += wait;
        await sleep(wait);
        continue;
      }
      const parsed = parse(reply.text);
      if (reply.status >= 200 && reply.status < 300) {
        if (!parsed)
          throw Object.assign(new Error('DynamoDB answered with a body that is not JSON'), {
            $metadata: metadata(reply.status, reply),
          });
        return { output: parsed, metadata: metadata(reply.status, reply) };
      }
      const failure = {
        statusCode: reply.status,
        body: {
          __type: reply.status >= 500 ? 'InternalServerError' : 'UnknownError',
          message: parsed ? undefined : reply.text.slice(0, 200) || `HTTP ${reply.status}`,
          ...parsed,
        },
      };
      const type = String(failure.body.__type ?? '');
      const name = type.slice(type.lastIndexOf('#') + 1).split(':')[0];
      if (attempt < maxAttempts) {
        const serverDate = Date.parse(header(reply.headers, 'date') ?? '');
        const skewed =
          CLOCK_SKEW_TYPES.has(name) &&
          Number.isFinite(serverDate) &&
          Math.abs(serverDate - (Date.now() + skewMs)) > 4 * 60_000;
        if (skewed) {
          skewMs = serverDate - Date.now();
          continue;
        }
        if (RETRYABLE_TYPES.has(name) || reply.status >= 500 || reply.status === 429) {
          const wait = backoffMs(attempt, THROTTLING_TYPES.has(name) || reply.status === 429);
          totalRetryDelay += wait;
          await sleep(wait);
          continue;
        }
      }
      return { error: failure, metadata: metadata(reply.status, reply) } satisfies StoreAnswer;
    }
  };
}

function header(headers: IncomingHttpHeaders | undefined, name: string): string | undefined {
  const v = headers?.[name];
  return Array.isArray(v) ? v[0] : v;
}

function parse(text: string): Record<string, any> | undefined {
  if (!text) return {};
  try {
    const v = JSON.parse(text);
    return v && typeof v === 'object' && !Array.isArray(v) ? v : undefined;
  } catch {
    return undefined;
  }
}
