import { createRequire } from 'node:module';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ROOT } from '../../infra/functions';
import { tracedDriver } from '../../shared/databases/traced-driver';
import { OutboundRefused, sendOutbound } from '../../shared/outbound';
import { resetConfig } from '../../shared/platform/config';
import { resetTracing, type SpanInfo, type SpanKind, sampled, traced } from '../../shared/platform/tracing';

/** A tracer that records the spans it is asked for and runs their work. */
function recorder() {
  const spans: { kind: SpanKind; name: string; info?: SpanInfo }[] = [];
  return {
    spans,
    span<T>(kind: SpanKind, name: string, work: () => Promise<T>, info?: SpanInfo) {
      spans.push({ kind, name, info });
      return work();
    },
  };
}

describe('traced(): spans only in a deployed, traced and sampled invocation', () => {
  const env = { ...process.env };
  let rec: ReturnType<typeof recorder>;
  beforeEach(() => {
    Object.assign(process.env, {
      LOUPE_RUNTIME: 'aws',
      LOUPE_TRACING: 'on',
      AWS_LAMBDA_FUNCTION_NAME: 'Loupe-http-connections',
      _X_AMZN_TRACE_ID: 'Root=1-6745a0b1-0123456789abcdef01234567;Parent=53995c3f42cd8ad8;Sampled=1',
    });
    resetConfig();
    rec = recorder();
    resetTracing(rec);
  });
  afterEach(() => {
    process.env = { ...env };
    resetConfig();
    resetTracing();
  });

  it('records the span and returns the work’s result, or its very error', async () => {
    expect(await traced('store', 'DynamoDB', async () => 42, { annotations: { operation: 'GetItem' } })).toBe(
      42,
    );
    const boom = new Error('boom');
    await expect(traced('database', 'postgres', async () => Promise.reject(boom))).rejects.toBe(boom);
    expect(rec.spans).toEqual([
      { kind: 'store', name: 'DynamoDB', info: { annotations: { operation: 'GetItem' } } },
      { kind: 'database', name: 'postgres', info: undefined },
    ]);
  });

  it('runs the work alone when the invocation is not sampled, tracing is off, or not in AWS', async () => {
    process.env._X_AMZN_TRACE_ID =
      'Root=1-6745a0b1-0123456789abcdef01234567;Parent=53995c3f42cd8ad8;Sampled=0';
    expect(await traced('store', 'DynamoDB', async () => 1)).toBe(1);
    process.env._X_AMZN_TRACE_ID = 'Root=1-6745a0b1-0123456789abcdef01234567;Sampled=1';
    process.env.LOUPE_TRACING = 'off';
    resetConfig();
    resetTracing(rec);
    expect(await traced('store', 'DynamoDB', async () => 2)).toBe(2);
    process.env.LOUPE_TRACING = 'on';
    process.env.LOUPE_RUNTIME = 'local';
    resetConfig();
    resetTracing(rec);
    expect(await traced('store', 'DynamoDB', async () => 3)).toBe(3);
    expect(rec.spans).toEqual([]);
  });

  it('reads the sampling decision of the trace header exactly', () => {
    expect(sampled('Root=1-a-b;Parent=c;Sampled=1')).toBe(true);
    expect(sampled('Root=1-a-b;Sampled=1;Lineage=x')).toBe(true);
    expect(sampled('Root=1-a-b;Parent=c;Sampled=0')).toBe(false);
    expect(sampled('Root=1-a-b;Sampled=10')).toBe(false);
    expect(sampled('')).toBe(false);
  });

  it('makes every database round trip a span named after the type, without the statement text', async () => {
    const calls: string[] = [];
    const driver = tracedDriver(
      {
        ping: async () => {
          calls.push('ping');
          return { latencyMs: 1 };
        },
        introspect: async () => {
          calls.push('introspect');
          return { tables: [] } as never;
        },
        query: async (text) => {
          calls.push(`query ${text}`);
          return { rowCount: 0 } as never;
        },
        close: async () => {
          calls.push('close');
        },
      },
      'POSTGRES',
    );
    await driver.ping();
    await driver.introspect();
    await driver.query("SELECT secret FROM t WHERE email = 'a@b.c'", {} as never);
    await driver.close();
    expect(calls).toEqual([
      'ping',
      'introspect',
      "query SELECT secret FROM t WHERE email = 'a@b.c'",
      'close',
    ]);
    expect(rec.spans.map((s) => [s.kind, s.name, s.info?.annotations?.call])).toEqual([
      ['database', 'postgres', 'ping'],
      ['database', 'postgres', 'introspect'],
      ['database', 'postgres', 'query'],
    ]);
    expect(JSON.stringify(rec.spans)).not.toContain('secret');
  });

  it('makes an outbound request a span named after the host, its URL without the query string', async () => {
    await expect(
      sendOutbound({ url: 'https://127.0.0.1/hooks/abc?token=s3cr3t', method: 'POST', timeoutMs: 1000 }),
    ).rejects.toBeInstanceOf(OutboundRefused);
    expect(rec.spans).toEqual([
      {
        kind: 'outbound',
        name: '127.0.0.1',
        info: { http: { method: 'POST', url: 'https://127.0.0.1/hooks/abc' } },
      },
    ]);
  });
});

describe('the X-Ray context bundled in place of cls-hooked (infra/xray-context.cjs)', () => {
  const cls = createRequire(import.meta.url)(join(ROOT, 'infra', 'xray-context.cjs'));
  afterEach(() => cls.reset());

  it('keeps the root context entered outside any run, and a child context per run that its async work inherits', async () => {
    const ns = cls.createNamespace('AWSXRay');
    expect(cls.getNamespace('AWSXRay')).toBe(ns);
    expect(() => ns.set('segment', 'x')).toThrow(/No context available/);
    ns.enter(ns.createContext());
    ns.set('segment', 'facade');
    const seen: string[] = [];
    const inner = ns.runAndReturn(() => {
      expect(ns.get('segment')).toBe('facade'); // inherited from the root
      ns.set('segment', 'sub-1');
      return (async () => {
        await new Promise((r) => setTimeout(r, 5));
        seen.push(ns.get('segment'));
        await ns.runAndReturn(async () => {
          ns.set('segment', 'sub-2');
          await Promise.resolve();
          seen.push(ns.get('segment'));
        });
        seen.push(ns.get('segment'));
      })();
    });
    // Outside the run, the root is untouched, even while the run's work is pending.
    expect(ns.get('segment')).toBe('facade');
    await inner;
    expect(seen).toEqual(['sub-1', 'sub-2', 'sub-1']);
    expect(ns.get('segment')).toBe('facade');
  });

  it('binds a function to the context it was bound in', async () => {
    const ns = cls.createNamespace('AWSXRay');
    ns.enter(ns.createContext());
    ns.set('segment', 'root');
    const bound = ns.runAndReturn(() => {
      ns.set('segment', 'inside');
      return ns.bind(() => ns.get('segment'));
    });
    expect(bound()).toBe('inside');
    expect(ns.get('segment')).toBe('root');
    cls.destroyNamespace('AWSXRay');
    expect(cls.getNamespace('AWSXRay')).toBeUndefined();
  });
});
