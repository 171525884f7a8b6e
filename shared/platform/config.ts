import * as z from 'zod/mini';
import { en } from 'zod/v4/locales';
import { isCidrList } from './cidr';

// Zod compiles a parser (new Function) for every object schema on its first parse: about 2 ms of every
// cold start for the configuration and the first request's schemas. In Lambda (a cold start per instance)
// it interprets instead; the local server, which lives long, compiles: its MCP calls and REST reads
// measured 0.1-0.3 ms of CPU less per request with the compiled parsers (the SDK's request and result
// schemas, the tools' arguments, the REST bodies). The results are the same. Set here, in the module every
// function imports before it validates anything.
/** aws inside Lambda (or when LOUPE_RUNTIME says so), local otherwise: the rule `config().runtime` follows. */
const runtimeOf = (env: { LOUPE_RUNTIME?: string; AWS_LAMBDA_FUNCTION_NAME?: string }) =>
  env.LOUPE_RUNTIME ?? (env.AWS_LAMBDA_FUNCTION_NAME ? 'aws' : 'local');
const inLambda = runtimeOf(process.env) === 'aws';
z.config({ jitless: inLambda });
// zod/mini loads no locale (classic zod set English by default): validation messages are English's.
z.config(en());

const Env = z.object({
  /** aws inside Lambda, local under `npm start`, the CLI and tests. */
  LOUPE_RUNTIME: z.optional(z.enum(['aws', 'local'])),
  AWS_LAMBDA_FUNCTION_NAME: z.optional(z.string()),
  LOUPE_TABLE_NAME: z._default(z.string().check(z.minLength(1)), 'loupe-main'),
  /** DynamoDB endpoint override (dynalite locally). */
  LOUPE_DYNAMODB_ENDPOINT: z.optional(z.string().check(z.url())),
  AWS_REGION: z.optional(z.string()),
  LOUPE_DATA_DIR: z._default(z.string(), '.data'),
  /** base64 of 32 bytes: local master key for AES-256-GCM (else .data/master.key). */
  LOUPE_MASTER_KEY: z.optional(z.string()),
  LOUPE_KMS_KEY_ID: z.optional(z.string()),
  LOUPE_QUEUE_URLS: z.optional(z.string()),
  LOUPE_SCHEDULER_GROUP: z.optional(z.string()),
  LOUPE_SCHEDULER_ROLE_ARN: z.optional(z.string()),
  LOUPE_WORKER_ARNS: z.optional(z.string()),
  LOUPE_PUBLIC_URL: z.optional(z.string().check(z.url())),
  /** Path prefix of a custom domain's base path mapping, stripped before routing (e.g. `/loupe`). */
  LOUPE_BASE_PATH: z.optional(z.string().check(z.regex(/^(\/[A-Za-z0-9._~-]+)+$/))),
  LOUPE_ORG_RATE_LIMIT: z._default(z.coerce.number().check(z.int(), z.positive()), 600),
  LOUPE_AI_RATE_LIMIT: z._default(z.coerce.number().check(z.int(), z.positive()), 60),
  LOUPE_DISCOVERY_RATE_LIMIT: z._default(z.coerce.number().check(z.int(), z.positive()), 60),
  /**
   * How long an instance reuses an API key lookup (authentication) before reading it again: what another
   * instance's revocation or member change may take to reach it (the instance that made it sees it at once).
   * At most 10 s; 0 reads the key on every request.
   */
  LOUPE_KEY_CACHE_MS: z._default(z.coerce.number().check(z.int(), z.gte(0), z.lte(10_000)), 10_000),
  /** Local runtime: handler instances in worker threads (0: in the main thread); default infra/local/instances.ts. */
  LOUPE_LOCAL_INSTANCES: z.optional(z.coerce.number().check(z.int(), z.gte(0), z.lte(64))),
  LOUPE_DEFAULT_BALANCE_CENTS: z._default(z.coerce.number().check(z.nonnegative()), 500),
  LOUPE_LOG_LEVEL: z._default(z.enum(['DEBUG', 'INFO', 'WARN', 'ERROR', 'SILENT']), 'INFO'),
  OPENAI_API_KEY: z.optional(z.string()),
  OPENAI_BASE_URL: z.optional(z.string().check(z.url())),
  LOUPE_MODEL: z._default(z.string(), 'gpt-4o-mini'),
  LOUPE_OPENAI_SECRET_ARN: z.optional(z.string()),
  LOUPE_MODEL_PRICES: z.optional(z.string()),
  /** Embedding model of the optional schema embedding index (same provider as chat); unset or empty: off. */
  LOUPE_EMBEDDING_MODEL: z.optional(z.string()),
  /** Dimensions asked of the embedding model (models that can shorten their vectors); unset: the model's own. */
  LOUPE_EMBEDDING_DIMENSIONS: z.pipe(
    z.transform((v) => (v === '' ? undefined : v)),
    z.optional(z.coerce.number().check(z.int(), z.gte(8), z.lte(4096))),
  ),
  LOUPE_OUTBOUND_TEST_HOSTS: z.optional(z.string()),
  /** Local development only: webhooks may go to loopback over plain http:// (refused and ignored in Lambda). */
  LOUPE_DEV_ALLOW_LOOPBACK_HTTP: z._default(z.enum(['true', 'false']), 'false'),
  SMTP_URL: z.optional(z.string()),
  /** SQLite files: `<root>/<orgId>/…` locally (default `<LOUPE_DATA_DIR>/sqlite`). */
  LOUPE_SQLITE_ROOT: z.optional(z.string().check(z.minLength(1))),
  /** SQLite objects when deployed: `s3://<bucket>/<orgId>/…` only. */
  LOUPE_SQLITE_BUCKET: z.optional(
    z.string().check(z.regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, 'an S3 bucket name')),
  ),
  /** Database host policy as deployed (true) or local (false); default: deployed when running in Lambda. */
  LOUPE_DB_HOST_POLICY: z.optional(z.enum(['deployed', 'local'])),
  /** Comma-separated CIDRs: database addresses always refused / always allowed (deny wins). */
  LOUPE_DB_DENY_CIDRS: z.optional(
    z.string().check(z.refine(isCidrList, 'a comma-separated list of CIDRs or addresses')),
  ),
  LOUPE_DB_ALLOW_CIDRS: z.optional(
    z.string().check(z.refine(isCidrList, 'a comma-separated list of CIDRs or addresses')),
  ),
  /** Seconds a submitted query waits for approval before it expires (default 24 h). */
  LOUPE_APPROVAL_TTL_SECONDS: z._default(
    z.coerce.number().check(z.int(), z.positive(), z.lte(31_536_000)),
    86_400,
  ),
  /** Verified SES identity (address, domain or identity ARN) that workflow email is sent from in AWS. */
  LOUPE_SES_IDENTITY: z.optional(z.string().check(z.minLength(1))),
  /** From address of workflow email (default: the SES identity, or loupe@localhost locally). */
  LOUPE_MAIL_FROM: z.optional(
    z.string().check(z.regex(/^[^\s@<>,"]+@[^\s@<>,"]+$/, 'a plain email address')),
  ),
  /** A workflow run's deadline (5 minutes); shorter in tests. */
  LOUPE_WORKFLOW_RUN_DEADLINE_MS: z._default(
    z.coerce.number().check(z.int(), z.gte(100), z.lte(900_000)),
    300_000,
  ),
  /** Database connect timeout (TCP, TLS, login, or waiting for a pooled connection). */
  LOUPE_DB_CONNECT_TIMEOUT_MS: z._default(
    z.coerce.number().check(z.int(), z.gte(500), z.lte(20_000)),
    10_000,
  ),
  /** One database statement, connect included: the server's own limit and a client-side timer (504 QUERY_TIMEOUT). */
  LOUPE_DB_STATEMENT_TIMEOUT_MS: z._default(
    z.coerce.number().check(z.int(), z.gte(1000), z.lte(25_000)),
    25_000,
  ),
  /**
   * Sessions per database connection one process may hold (each adapter's pool; opened as concurrent
   * reads need them). The default does not cap 16 concurrent clients.
   */
  LOUPE_DB_POOL_SIZE: z._default(z.coerce.number().check(z.int(), z.gte(1), z.lte(200)), 20),
  /**
   * How long a read waits for its statement before writing its history entry without the outcome
   * (docs/internals/read-path.md). A statement that ends first has its entry written once, outcome included,
   * before the answer: one store call instead of two. Unset: 0 in AWS (the entry is written alongside the
   * statement, as a DynamoDB round trip costs time, not CPU), 250 ms locally (a store call of the local
   * runtime costs CPU on the same thread, not a round trip).
   */
  LOUPE_HISTORY_OPEN_AFTER_MS: z.optional(z.coerce.number().check(z.int(), z.gte(0), z.lte(60_000))),
  /** POST /connections/{id}/test and health checks: connect and one round trip. */
  LOUPE_DB_TEST_TIMEOUT_MS: z._default(z.coerce.number().check(z.int(), z.gte(1000), z.lte(25_000)), 15_000),
  /**
   * How long POST /workflows/{id}/run (and an action test) waits for its run before answering it RUNNING
   * (20 s; always at least 2 s under the request's remaining time). Shorter in tests.
   */
  LOUPE_MANUAL_RUN_WAIT_MS: z._default(z.coerce.number().check(z.int(), z.gte(0), z.lte(25_000)), 20_000),
  /** Local server: how long a stop (SIGTERM) lets the requests under way finish before cutting them. */
  LOUPE_DRAIN_MS: z._default(z.coerce.number().check(z.int(), z.gte(0), z.lte(120_000)), 25_000),
  /** Multiplies the event-webhook retry delays (tests use a small fraction). */
  LOUPE_WEBHOOK_RETRY_SCALE: z._default(z.coerce.number().check(z.positive(), z.lte(10)), 1),
  /** Timeout of one event-webhook delivery attempt, connect to last byte. */
  LOUPE_WEBHOOK_TIMEOUT_MS: z._default(z.coerce.number().check(z.int(), z.gte(1000), z.lte(25_000)), 10_000),
  /** CloudWatch namespace of Loupe's own metrics in AWS (the stack sets `Loupe/<stack name>`). */
  POWERTOOLS_METRICS_NAMESPACE: z.optional(z.string().check(z.minLength(1), z.maxLength(255))),
  /** X-Ray subsegments (store, database, outbound HTTP) in AWS: `off` loads no tracer at all (the stack sets it). */
  LOUPE_TRACING: z._default(z.enum(['on', 'off']), 'on'),
  /** A scheduled workflow run starting later than this after its due time counts as late (ScheduledRunsLate). */
  LOUPE_SCHEDULE_LATE_MS: z._default(
    z.coerce.number().check(z.int(), z.gte(1000), z.lte(86_400_000)),
    120_000,
  ),
});

export type Config = z.infer<typeof Env> & { runtime: 'aws' | 'local' };

let cached: Config | undefined;

/** Reads the environment once, validates it, and fails fast naming the bad variable. */
export function config(): Config {
  if (cached) return cached;
  const parsed = Env.safeParse(process.env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new Error(`Invalid configuration: ${problems}`);
  }
  const env = parsed.data;
  const runtime = runtimeOf(env) as Config['runtime'];
  cached = { ...env, runtime };
  return cached;
}

/** Tests and the local runtime change the environment before first use; this forgets the cached copy. */
export function resetConfig(): void {
  cached = undefined;
}
