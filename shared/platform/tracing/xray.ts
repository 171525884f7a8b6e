import { Tracer } from '@aws-lambda-powertools/tracer';
import type { SpanInfo, SpanKind, SpanTracer } from './index';

type Subsegment = NonNullable<ReturnType<Tracer['getSegment']>> & {
  namespace?: string;
  http?: unknown;
  addAnnotation(key: string, value: string | number | boolean): void;
  addError(error: Error, remote?: boolean): void;
  addErrorFlag(): void;
  addFaultFlag(): void;
  close(): void;
};

/**
 * X-Ray subsegments through Powertools Tracer. Powertools' own HTTP capture is off (it patches node:http
 * and node:https, which the outbound module and the store client time themselves); `fetch` (the model
 * provider's client) is traced through Node's diagnostics channels. Bundled with the X-Ray SDK's context on
 * AsyncLocalStorage (infra/bundling-powertools.ts), so nested spans find their parent at no cost per await.
 */
export function xrayTracer(): SpanTracer {
  const tracer = new Tracer({ serviceName: 'loupe', captureHTTPsRequests: false });
  if (tracer.isTracingEnabled()) tracer.provider.instrumentFetch();
  return {
    span<T>(kind: SpanKind, name: string, work: () => Promise<T>, info?: SpanInfo): Promise<T> {
      if (!tracer.isTracingEnabled()) return work();
      return tracer.provider.captureAsyncFunc(name, async (raw) => {
        const sub = raw as Subsegment | undefined;
        if (!sub) return work();
        sub.namespace = kind === 'store' ? 'aws' : 'remote';
        sub.addAnnotation('kind', kind);
        for (const [k, v] of Object.entries(info?.annotations ?? {})) sub.addAnnotation(k, v);
        if (info?.http) sub.http = { request: { method: info.http.method, url: info.http.url } };
        try {
          return await work();
        } catch (e) {
          if (e instanceof Error) sub.addError(e, kind !== 'store');
          else sub.addErrorFlag();
          throw e;
        } finally {
          sub.close();
        }
      }) as Promise<T>;
    },
  };
}
