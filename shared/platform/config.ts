import ipaddr from 'ipaddr.js';
import * as z from 'zod';

// Zod compiles a parser (new Function) for every object schema on its first parse: about 2 ms of every
// cold start for the configuration and the first request's schemas, and no faster for the small objects
// this service validates afterwards. Its interpreted path gives the same results. Set here, in the module
// every function imports before it validates anything.
z.config({ jitless: true });

/** `10.0.0.0/8, fd00::/8, 192.0.2.7`: every entry a CIDR or a single address. */
function cidrList(v: string): boolean {
  return v.split(',').every((raw) => {
    const e = raw.trim();
    if (!e) return true;
    try {
      if (e.includes('/')) ipaddr.parseCIDR(e);
      else ipaddr.parse(e);
      return true;
    } catch {
      return false;
    }
  });
}

const Env = z.object({
  /** aws inside Lambda, local under `npm start`, the CLI and tests. */
  LOUPE_RUNTIME: z.enum(['aws', 'local']).optional(),
  AWS_LAMBDA_FUNCTION_NAME: z.string().optional(),
  LOUPE_TABLE_NAME: z.string().min(1).default('loupe-main'),
  /** DynamoDB endpoint override (dynalite locally). */
  LOUPE_DYNAMODB_ENDPOINT: z.string().url().optional(),
  AWS_REGION: z.string().optional(),
  LOUPE_DATA_DIR: z.string().default('.data'),
  /** base64 of 32 bytes: local master key for AES-256-GCM (else .data/master.key). */
  LOUPE_MASTER_KEY: z.string().optional(),
  LOUPE_KMS_KEY_ID: z.string().optional(),
  LOUPE_QUEUE_URLS: z.string().optional(),
  LOUPE_SCHEDULER_GROUP: z.string().optional(),
  LOUPE_SCHEDULER_ROLE_ARN: z.string().optional(),
  LOUPE_WORKER_ARNS: z.string().optional(),
  LOUPE_PUBLIC_URL: z.string().url().optional(),
  /** Path prefix of a custom domain's base path mapping, stripped before routing (e.g. `/loupe`). */
  LOUPE_BASE_PATH: z
    .string()
    .regex(/^(\/[A-Za-z0-9._~-]+)+$/)
    .optional(),
  LOUPE_ORG_RATE_LIMIT: z.coerce.number().int().positive().default(600),
  LOUPE_AI_RATE_LIMIT: z.coerce.number().int().positive().default(60),
  LOUPE_DISCOVERY_RATE_LIMIT: z.coerce.number().int().positive().default(60),
  /** Local runtime: handler instances in worker threads (0: in the main thread); default infra/local/instances.ts. */
  LOUPE_LOCAL_INSTANCES: z.coerce.number().int().min(0).max(64).optional(),
  LOUPE_DEFAULT_BALANCE_CENTS: z.coerce.number().nonnegative().default(500),
  LOUPE_LOG_LEVEL: z.enum(['DEBUG', 'INFO', 'WARN', 'ERROR', 'SILENT']).default('INFO'),
  OPENAI_API_KEY: z.string().optional(),
  OPENAI_BASE_URL: z.string().url().optional(),
  LOUPE_MODEL: z.string().default('gpt-4o-mini'),
  LOUPE_OPENAI_SECRET_ARN: z.string().optional(),
  LOUPE_MODEL_PRICES: z.string().optional(),
  /** Embedding model of the optional schema embedding index (same provider as chat); unset or empty: off. */
  LOUPE_EMBEDDING_MODEL: z.string().optional(),
  /** Dimensions asked of the embedding model (models that can shorten their vectors); unset: the model's own. */
  LOUPE_EMBEDDING_DIMENSIONS: z.preprocess(
    (v) => (v === '' ? undefined : v),
    z.coerce.number().int().min(8).max(4096).optional(),
  ),
  LOUPE_OUTBOUND_TEST_HOSTS: z.string().optional(),
  SMTP_URL: z.string().optional(),
  /** SQLite files: `<root>/<orgId>/…` locally (default `<LOUPE_DATA_DIR>/sqlite`). */
  LOUPE_SQLITE_ROOT: z.string().min(1).optional(),
  /** SQLite objects when deployed: `s3://<bucket>/<orgId>/…` only. */
  LOUPE_SQLITE_BUCKET: z
    .string()
    .regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, 'an S3 bucket name')
    .optional(),
  /** Database host policy as deployed (true) or local (false); default: deployed when running in Lambda. */
  LOUPE_DB_HOST_POLICY: z.enum(['deployed', 'local']).optional(),
  /** Comma-separated CIDRs: database addresses always refused / always allowed (deny wins). */
  LOUPE_DB_DENY_CIDRS: z.string().refine(cidrList, 'a comma-separated list of CIDRs or addresses').optional(),
  LOUPE_DB_ALLOW_CIDRS: z
    .string()
    .refine(cidrList, 'a comma-separated list of CIDRs or addresses')
    .optional(),
  /** Seconds a submitted query waits for approval before it expires (default 24 h). */
  LOUPE_APPROVAL_TTL_SECONDS: z.coerce.number().int().positive().max(31_536_000).default(86_400),
  /** Verified SES identity (address, domain or identity ARN) that workflow email is sent from in AWS. */
  LOUPE_SES_IDENTITY: z.string().min(1).optional(),
  /** From address of workflow email (default: the SES identity, or loupe@localhost locally). */
  LOUPE_MAIL_FROM: z
    .string()
    .regex(/^[^\s@<>,"]+@[^\s@<>,"]+$/, 'a plain email address')
    .optional(),
  /** A workflow run's deadline (5 minutes); shorter in tests. */
  LOUPE_WORKFLOW_RUN_DEADLINE_MS: z.coerce.number().int().min(100).max(900_000).default(300_000),
  /** Multiplies the event-webhook retry delays (tests use a small fraction). */
  LOUPE_WEBHOOK_RETRY_SCALE: z.coerce.number().positive().max(10).default(1),
  /** Timeout of one event-webhook delivery attempt, connect to last byte. */
  LOUPE_WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(1000).max(25_000).default(10_000),
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
  const runtime = env.LOUPE_RUNTIME ?? (env.AWS_LAMBDA_FUNCTION_NAME ? 'aws' : 'local');
  cached = { ...env, runtime };
  return cached;
}

/** Tests and the local runtime change the environment before first use; this forgets the cached copy. */
export function resetConfig(): void {
  cached = undefined;
}
