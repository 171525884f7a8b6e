import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { MeasureSink } from './port';

const UNITS = {
  count: MetricUnit.Count,
  ms: MetricUnit.Milliseconds,
  // CloudWatch has no currency unit: cents are a plain number.
  cents: MetricUnit.NoUnit,
} as const;

/**
 * Measures as CloudWatch metrics through Powertools Metrics: each observation is written at once as one
 * embedded-metric-format line on standard output (Powertools' own console, so Lambda's JSON log format
 * keeps it as it is), and CloudWatch Logs extracts the metric. No API call, no buffer to flush at the end
 * of an invocation (a timed-out invocation loses nothing already measured).
 * Dimensions: `service` (loupe) and the measure's labels.
 */
export function emfSink(namespace: string, serviceName = 'loupe'): MeasureSink {
  const metrics = new Metrics({ namespace, serviceName });
  return {
    record(def, value, labels) {
      for (const name of def.labels) metrics.addDimension(name, labels[name] || 'none');
      metrics.addMetric(def.emf, UNITS[def.unit], value);
      metrics.publishStoredMetrics();
    },
  };
}
