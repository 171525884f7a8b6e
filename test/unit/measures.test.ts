import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { InstanceRateLimiter } from '../../shared/http/rate-limit';
import { resetConfig } from '../../shared/platform/config';
import { count, MEASURES, type MeasureName, observe, setMeasureSink } from '../../shared/platform/measures';
import { emfSink } from '../../shared/platform/measures/emf';
import { mergeSnapshots, Registry, renderPrometheus } from '../../shared/platform/measures/registry';

/** The EMF lines written to stdout while `run` runs (Powertools Metrics writes with its own console). */
function emfLines(run: () => void): any[] {
  const lines: string[] = [];
  const write = process.stdout.write;
  process.stdout.write = ((chunk: unknown) => {
    lines.push(String(chunk));
    return true;
  }) as typeof process.stdout.write;
  try {
    run();
  } finally {
    process.stdout.write = write;
  }
  return lines
    .join('')
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l));
}

const labelsFor = (name: MeasureName) =>
  Object.fromEntries(MEASURES[name].labels.map((l, i) => [l, `value-${i}`])) as Record<string, string>;

describe('measures in AWS: one embedded-metric-format line per observation', () => {
  const env = { ...process.env };
  beforeEach(() => {
    process.env.LOUPE_RUNTIME = 'aws';
    process.env.POWERTOOLS_METRICS_NAMESPACE = 'Loupe/Test';
    delete process.env.POWERTOOLS_DEV;
    delete process.env.POWERTOOLS_METRICS_DISABLED;
    resetConfig();
    setMeasureSink(undefined);
  });
  afterEach(() => {
    process.env = { ...env };
    resetConfig();
    setMeasureSink(undefined);
  });

  it('writes QueriesRun with its namespace, unit, value and the service, source and outcome dimensions', () => {
    const [line, ...more] = emfLines(() => count('queriesRun', { source: 'query', outcome: 'success' }));
    expect(more).toEqual([]);
    expect(line._aws.CloudWatchMetrics).toEqual([
      {
        Namespace: 'Loupe/Test',
        Dimensions: [['service', 'source', 'outcome']],
        Metrics: [{ Name: 'QueriesRun', Unit: 'Count' }],
      },
    ]);
    expect(typeof line._aws.Timestamp).toBe('number');
    expect(line).toMatchObject({ service: 'loupe', source: 'query', outcome: 'success', QueriesRun: 1 });
  });

  it('writes a duration in milliseconds and a count of n', () => {
    const lines = emfLines(() => {
      observe('queryDuration', 12.5, {});
      count('aiTokens', { feature: 'chat', kind: 'prompt' }, 420);
    });
    expect(lines).toHaveLength(2);
    expect(lines[0]._aws.CloudWatchMetrics[0]).toMatchObject({
      Dimensions: [['service']],
      Metrics: [{ Name: 'QueryDuration', Unit: 'Milliseconds' }],
    });
    expect(lines[0].QueryDuration).toBe(12.5);
    expect(lines[1]).toMatchObject({ feature: 'chat', kind: 'prompt', AiTokens: 420 });
    expect(lines[1]._aws.CloudWatchMetrics[0].Dimensions).toEqual([['service', 'feature', 'kind']]);
  });

  it('keeps the dimensions of one observation off the next', () => {
    const [a, b] = emfLines(() => {
      count('webhookDeliveries', { outcome: 'failed' });
      count('scheduledRunsLate', {});
    });
    expect(a).toMatchObject({ outcome: 'failed', WebhookDeliveries: 1 });
    expect(b.outcome).toBeUndefined();
    expect(b._aws.CloudWatchMetrics[0].Dimensions).toEqual([['service']]);
  });

  it('writes MissedScheduledRuns with the cause dimension and the number of due times missed', () => {
    const [line, ...more] = emfLines(() => count('scheduledRunsMissed', { cause: 'not_started' }, 3));
    expect(more).toEqual([]);
    expect(line._aws.CloudWatchMetrics).toEqual([
      {
        Namespace: 'Loupe/Test',
        Dimensions: [['service', 'cause']],
        Metrics: [{ Name: 'MissedScheduledRuns', Unit: 'Count' }],
      },
    ]);
    expect(line).toMatchObject({ service: 'loupe', cause: 'not_started', MissedScheduledRuns: 3 });
  });

  it('names every measure of the catalog after its CloudWatch name with exactly its labels as dimensions', () => {
    const sink = emfSink('Loupe/Catalog');
    for (const name of Object.keys(MEASURES) as MeasureName[]) {
      const def = MEASURES[name];
      const [line] = emfLines(() => sink.record(def, 3, labelsFor(name)));
      const cw = line._aws.CloudWatchMetrics[0];
      expect(cw.Metrics[0].Name, name).toBe(def.emf);
      expect(cw.Dimensions, name).toEqual([['service', ...def.labels]]);
      expect(line[def.emf], name).toBe(3);
      for (const [k, v] of Object.entries(labelsFor(name))) expect(line[k], `${name}.${k}`).toBe(v);
    }
  });

  it('counts a 429 of a rate limit in RateLimited, named after the limit', () => {
    const limiter = new InstanceRateLimiter(1);
    limiter.hit('203.0.113.9');
    const lines = emfLines(() => expect(() => limiter.hit('203.0.113.9')).toThrow(/Too many requests/));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ limit: 'discovery', RateLimited: 1 });
  });

  it('never throws into the caller, and writes nothing when Powertools metrics are disabled', () => {
    process.env.POWERTOOLS_METRICS_DISABLED = 'true';
    setMeasureSink(undefined);
    expect(emfLines(() => count('approvals', { outcome: 'expired' }))).toEqual([]);
    setMeasureSink({
      record() {
        throw new Error('broken sink');
      },
    });
    expect(() => count('approvals', { outcome: 'expired' })).not.toThrow();
  });
});

describe('measures locally: the Prometheus registry', () => {
  it('renders counters and cumulative histograms in seconds, with HELP and TYPE for every measure', () => {
    const r = new Registry();
    r.record(MEASURES.queriesRun, 1, { source: 'query', outcome: 'success' });
    r.record(MEASURES.queriesRun, 2, { source: 'query', outcome: 'success' });
    r.record(MEASURES.queriesRun, 1, { source: 'chat', outcome: 'timeout' });
    for (const ms of [3, 40, 40, 30_000]) r.record(MEASURES.queryDuration, ms, {});
    const text = renderPrometheus(r.snapshot());
    for (const def of Object.values(MEASURES)) {
      expect(text).toContain(`# HELP ${def.prom} `);
      expect(text).toContain(`# TYPE ${def.prom} ${def.kind}\n`);
    }
    expect(text).toContain('loupe_queries_run_total{source="query",outcome="success"} 3\n');
    expect(text).toContain('loupe_queries_run_total{source="chat",outcome="timeout"} 1\n');
    expect(text).toContain('loupe_query_duration_seconds_bucket{le="0.005"} 1\n');
    expect(text).toContain('loupe_query_duration_seconds_bucket{le="0.025"} 1\n');
    expect(text).toContain('loupe_query_duration_seconds_bucket{le="0.05"} 3\n');
    expect(text).toContain('loupe_query_duration_seconds_bucket{le="25"} 3\n');
    expect(text).toContain('loupe_query_duration_seconds_bucket{le="+Inf"} 4\n');
    expect(text).toContain('loupe_query_duration_seconds_sum 30.083\n');
    expect(text).toContain('loupe_query_duration_seconds_count 4\n');
    // A measure without labels is there before its first observation; one with labels is not.
    expect(text).toContain('loupe_scheduled_runs_late_total 0\n');
    expect(text).not.toMatch(/^loupe_webhook_deliveries_total/m);
  });

  it('escapes label values and merges the snapshots of several threads', () => {
    const a = new Registry();
    const b = new Registry();
    a.record(MEASURES.httpRequests, 1, { group: 'con"n\\x\ny', code: '200' });
    b.record(MEASURES.httpRequests, 4, { group: 'con"n\\x\ny', code: '200' });
    b.record(MEASURES.httpDuration, 1500, { group: 'usage' });
    a.record(MEASURES.httpDuration, 2, { group: 'usage' });
    const text = renderPrometheus(mergeSnapshots([a.snapshot(), b.snapshot()]));
    expect(text).toContain('loupe_http_requests_total{group="con\\"n\\\\x\\ny",code="200"} 5\n');
    expect(text).toContain('loupe_http_request_duration_seconds_bucket{group="usage",le="0.005"} 1\n');
    expect(text).toContain('loupe_http_request_duration_seconds_bucket{group="usage",le="2.5"} 2\n');
    expect(text).toContain('loupe_http_request_duration_seconds_count{group="usage"} 2\n');
    expect(text).toContain('loupe_http_request_duration_seconds_sum{group="usage"} 1.502\n');
  });

  it('gives every measure distinct names that follow the Prometheus conventions', () => {
    const defs = Object.values(MEASURES);
    expect(new Set(defs.map((d) => d.prom)).size).toBe(defs.length);
    expect(new Set(defs.map((d) => d.emf)).size).toBe(defs.length);
    for (const d of defs) {
      expect(d.prom).toMatch(/^loupe_[a-z_]+$/);
      if (d.kind === 'counter') expect(d.prom).toMatch(/_total$/);
      if (d.unit === 'ms') expect(d.prom).toMatch(/_seconds$/);
      for (const l of d.labels) expect(l).toMatch(/^[a-z_]+$/);
      // `service` is the dimension every EMF line already has (Powertools' default): a label may not take it.
      expect(d.labels).not.toContain('service');
    }
  });
});
