import { config } from '../config';

/** What a subsegment stands for: a call to the table, a customer database, or an outbound HTTP request. */
export type SpanKind = 'store' | 'database' | 'outbound';

export interface SpanInfo {
  /** Indexed in X-Ray (filter expressions): short values only, never a secret or a query text. */
  annotations?: Record<string, string | number | boolean>;
  /** For outbound HTTP: the method and URL (without its query string). */
  http?: { method: string; url: string };
}

/** The tracer's side of a span: X-Ray through Powertools Tracer (xray.ts). */
export interface SpanTracer {
  span<T>(kind: SpanKind, name: string, work: () => Promise<T>, info?: SpanInfo): Promise<T>;
}

let on: boolean | undefined;
let tracer: Promise<SpanTracer> | undefined;

/**
 * Tracing is on in a deployed function with active tracing (the stack sets LOUPE_TRACING=on and Lambda's
 * tracing mode Active); off under `npm start`, in tests, and with the `tracing` deployment setting false.
 */
function tracingOn(): boolean {
  if (on === undefined) {
    const cfg = config();
    on = cfg.runtime === 'aws' && cfg.LOUPE_TRACING === 'on' && !!process.env.AWS_LAMBDA_FUNCTION_NAME;
  }
  return on;
}

/** This invocation's X-Ray trace header: Lambda's invoke store when it has one, else the environment. */
function traceHeader(): string {
  const store = (globalThis as { awslambda?: { InvokeStore?: { getXRayTraceId?(): string | undefined } } })
    .awslambda?.InvokeStore;
  return store?.getXRayTraceId?.() ?? process.env._X_AMZN_TRACE_ID ?? '';
}

/** Whether Lambda sampled this invocation (only sampled ones are recorded by X-Ray). */
export const sampled = (header = traceHeader()) => /(?:^|;)\s*Sampled=1(?:;|$)/.test(header);

/**
 * Runs `work` as an X-Ray subsegment named `name` when this invocation is traced and sampled; otherwise
 * just runs it. The tracer (Powertools Tracer and the X-Ray SDK, a lazy chunk) loads with the first
 * sampled span of an instance, so an invocation that is not traced never pays for it. Never changes the
 * outcome of `work`: its result or its error comes back as it was.
 */
export async function traced<T>(
  kind: SpanKind,
  name: string,
  work: () => Promise<T>,
  info?: SpanInfo,
): Promise<T> {
  if (!tracingOn() || !sampled()) return work();
  tracer ??= import('./xray').then((m) => m.xrayTracer());
  let t: SpanTracer;
  try {
    t = await tracer;
  } catch {
    return work();
  }
  return t.span(kind, name, work, info);
}

/** Tests and benchmarks: forget the decision and the tracer (the environment changed). */
export function resetTracing(use?: SpanTracer): void {
  on = undefined;
  tracer = use ? Promise.resolve(use) : undefined;
}
