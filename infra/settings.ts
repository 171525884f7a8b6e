import { existsSync, readFileSync, statSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import * as z from 'zod';
import type { FunctionEntry } from './functions';

/**
 * Deployment settings, read from CDK context (`cdk.json` "context" or `cdk deploy -c key=value`) and
 * validated at synth: a bad value stops `cdk synth` with one message naming every bad key. On the
 * command line lists are comma-separated and maps are JSON.
 */
export interface DeploymentSettings {
  stackName: string;
  /** Public base URL when the API sits behind a custom domain (else the stage URL). */
  publicUrl?: string;
  /** Path prefix the custom domain's base path mapping adds to every request path (e.g. `/loupe`). */
  basePath?: string;
  /** Functions that reach customer databases or the internet run in these subnets. */
  vpc?: { vpcId: string; subnetIds: string[]; securityGroupIds: string[] };
  /** PEM bundle shipped with every function and trusted through NODE_EXTRA_CA_CERTS. */
  caBundlePath?: string;
  /** Bucket holding SQLite databases at `<bucket>/<orgId>/…`. */
  sqliteBucket?: string;
  /** SES identity (verified domain or address) that workflow email is sent from. */
  sesIdentity?: string;
  /** An existing Secrets Manager secret (name) with the model provider key, instead of the stack's own. */
  modelSecretName?: string;
  /** Reserved concurrency per function name (HTTP group or worker). */
  reservedConcurrency: Record<string, number>;
  /** SQS event source maxConcurrency per queue worker (overrides the manifest). */
  maxConcurrency: Record<string, number>;
  /** Extra environment variables for every function. */
  environment: Record<string, string>;
  throttlingRateLimit?: number;
  throttlingBurstLimit?: number;
  /** E-mail address subscribed to the alarm topic (the subscription must be confirmed from the mail). */
  alarmEmail?: string;
  /** Active X-Ray tracing on every function and the API stage (default on). */
  tracing: boolean;
}

/** Variables the stack sets itself; `environment` may not override them. */
export const STACK_VARIABLES = [
  'LOUPE_TABLE_NAME',
  'LOUPE_KMS_KEY_ID',
  'LOUPE_QUEUE_URLS',
  'LOUPE_SCHEDULER_GROUP',
  'LOUPE_SCHEDULER_ROLE_ARN',
  'LOUPE_WORKER_ARNS',
  'LOUPE_OPENAI_SECRET_ARN',
  'LOUPE_PUBLIC_URL',
  'LOUPE_BASE_PATH',
  'LOUPE_SQLITE_BUCKET',
  'LOUPE_SES_IDENTITY',
  'LOUPE_RUNTIME',
  'NODE_EXTRA_CA_CERTS',
  'NODE_OPTIONS',
  'LOUPE_TRACING',
  'POWERTOOLS_METRICS_NAMESPACE',
  'POWERTOOLS_SERVICE_NAME',
];

const list = (item: z.ZodString) =>
  z.preprocess(
    (v) =>
      typeof v === 'string'
        ? v
            .split(',')
            .map((s) => s.trim())
            .filter(Boolean)
        : v,
    z.array(item),
  );
const jsonMap = <T extends z.ZodType>(value: T) =>
  z.preprocess(
    (v) => {
      if (typeof v !== 'string') return v;
      try {
        return JSON.parse(v);
      } catch {
        return v;
      }
    },
    z.record(z.string(), value),
  );
const intOf = (min: number, max: number) =>
  z.preprocess(
    (v) => (typeof v === 'string' && v.trim() !== '' ? Number(v) : v),
    z.number().int().min(min).max(max),
  );

const Context = z
  .object({
    stackName: z
      .string()
      .regex(/^[A-Za-z][A-Za-z0-9-]{0,39}$/, 'letters, digits and dashes, starting with a letter, at most 40')
      .default('Loupe'),
    publicUrl: z
      .string()
      .url()
      .refine((u) => u.startsWith('https://'), 'must be an https:// URL')
      .optional(),
    basePath: z
      .string()
      .regex(/^(\/[A-Za-z0-9._~-]+)+$/, 'a path like /loupe or /api/loupe, without a trailing slash')
      .optional(),
    vpcId: z
      .string()
      .regex(/^vpc-[0-9a-f]{8,17}$/, 'must look like vpc-0123456789abcdef0')
      .optional(),
    subnetIds: list(
      z.string().regex(/^subnet-[0-9a-f]{8,17}$/, 'must look like subnet-0123456789abcdef0'),
    ).optional(),
    securityGroupIds: list(
      z.string().regex(/^sg-[0-9a-f]{8,17}$/, 'must look like sg-0123456789abcdef0'),
    ).optional(),
    caBundlePath: z.string().min(1).optional(),
    sqliteBucket: z
      .string()
      .regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, 'must be an S3 bucket name')
      .optional(),
    sesIdentity: z
      .string()
      .regex(
        /^([^\s@<>,;]+@)?([a-z0-9]([a-z0-9-]*[a-z0-9])?\.)+[a-z]{2,}$/i,
        'must be a verified SES domain (example.com) or address (reports@example.com)',
      )
      .optional(),
    modelSecretName: z
      .string()
      .regex(/^[A-Za-z0-9/_+=.@-]{1,512}$/, 'must be a Secrets Manager secret name')
      .optional(),
    reservedConcurrency: jsonMap(intOf(1, 10_000)).default({}),
    maxConcurrency: jsonMap(intOf(2, 1000)).default({}),
    environment: jsonMap(z.string().max(2048)).default({}),
    throttleRate: intOf(1, 100_000).optional(),
    throttleBurst: intOf(1, 100_000).optional(),
    alarmEmail: z
      .string()
      .trim()
      .regex(/^[^\s@<>,;"]+@([a-z0-9]([a-z0-9-]*[a-z0-9])?\.)+[a-z]{2,}$/i, 'must be an e-mail address')
      .max(254)
      .optional(),
    tracing: z
      .preprocess(
        (v) => {
          const t = typeof v === 'string' ? v.trim().toLowerCase() : v;
          if (t === 'true' || t === 'on') return true;
          if (t === 'false' || t === 'off') return false;
          return t;
        },
        z.boolean({ message: 'must be true or false (on or off)' }),
      )
      .default(true),
  })
  .superRefine((c, ctx) => {
    const issue = (path: string, message: string) => ctx.addIssue({ code: 'custom', path: [path], message });
    if (c.vpcId && !c.subnetIds?.length) issue('subnetIds', 'vpcId needs at least one subnet id');
    if (!c.vpcId && (c.subnetIds?.length || c.securityGroupIds?.length))
      issue('vpcId', 'subnetIds and securityGroupIds need vpcId');
    for (const k of Object.keys(c.environment)) {
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(k)) issue('environment', `"${k}" is not a variable name`);
      else if (STACK_VARIABLES.includes(k) || k.startsWith('AWS_'))
        issue('environment', `${k} is set by the stack (use the dedicated setting)`);
    }
    if (c.caBundlePath) {
      const p = c.caBundlePath;
      if (!existsSync(p) || !statSync(p).isFile()) issue('caBundlePath', `${p} is not a file`);
      else if (!readFileSync(p, 'utf8').includes('-----BEGIN CERTIFICATE-----'))
        issue('caBundlePath', `${p} holds no PEM certificate`);
    }
  });

/**
 * Reads and validates the settings. `get` reads one context key; `functions` are the manifest entries,
 * so per-function maps may name only functions that exist (and maxConcurrency only queue workers).
 */
export function readDeploymentSettings(
  get: (key: string) => unknown,
  functions: FunctionEntry[],
  cwd = process.cwd(),
): DeploymentSettings {
  const keys = Object.keys(Context.shape);
  const raw: Record<string, unknown> = {};
  for (const k of keys) {
    const v = get(k);
    if (v !== undefined && v !== '') raw[k] = v;
  }
  if (typeof raw.caBundlePath === 'string' && !isAbsolute(raw.caBundlePath))
    raw.caBundlePath = resolve(cwd, raw.caBundlePath);
  const parsed = Context.safeParse(raw);
  const problems = parsed.success
    ? []
    : parsed.error.issues.map((i) => `${i.path.join('.') || '(context)'}: ${i.message}`);
  if (parsed.success) {
    const names = new Set(functions.map((f) => f.name));
    const queues = new Set(
      functions.filter((f) => f.kind === 'workers' && f.worker.queue).map((f) => f.name),
    );
    for (const k of Object.keys(parsed.data.reservedConcurrency))
      if (!names.has(k))
        problems.push(`reservedConcurrency: "${k}" is not a function (one of ${[...names].join(', ')})`);
    for (const k of Object.keys(parsed.data.maxConcurrency))
      if (!queues.has(k))
        problems.push(`maxConcurrency: "${k}" is not a queue worker (one of ${[...queues].join(', ')})`);
  }
  if (problems.length || !parsed.success)
    throw new Error(`Invalid deployment settings (CDK context):\n  ${problems.join('\n  ')}`);
  const c = parsed.data;
  const basePath = c.basePath ?? basePathOf(c.publicUrl);
  return {
    stackName: c.stackName,
    publicUrl: c.publicUrl?.replace(/\/+$/, ''),
    basePath,
    vpc: c.vpcId
      ? { vpcId: c.vpcId, subnetIds: c.subnetIds ?? [], securityGroupIds: c.securityGroupIds ?? [] }
      : undefined,
    caBundlePath: c.caBundlePath,
    sqliteBucket: c.sqliteBucket,
    sesIdentity: c.sesIdentity,
    modelSecretName: c.modelSecretName,
    reservedConcurrency: c.reservedConcurrency,
    maxConcurrency: c.maxConcurrency,
    environment: c.environment,
    throttlingRateLimit: c.throttleRate,
    throttlingBurstLimit: c.throttleBurst,
    alarmEmail: c.alarmEmail,
    tracing: c.tracing,
  };
}

/** `https://api.example.com/loupe` → `/loupe` (the base path mapping's prefix); none for a bare host. */
function basePathOf(publicUrl: string | undefined): string | undefined {
  if (!publicUrl) return undefined;
  const p = new URL(publicUrl).pathname.replace(/\/+$/, '');
  return p && p !== '/' ? p : undefined;
}
