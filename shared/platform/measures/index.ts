import { config } from '../config';
import { logger } from '../logger';
import { type CounterName, type HistogramName, type LabelsOf, MEASURES, type MeasureDef } from './catalog';
import { emfSink } from './emf';
import type { MeasureSink } from './port';
import { Registry } from './registry';

export type { CounterName, HistogramName, LabelsOf, MeasureName } from './catalog';
export { MEASURES } from './catalog';

let sink: MeasureSink | undefined;
/** This thread's registry of the local runtime (undefined in AWS). */
let registry: Registry | undefined;

function current(): MeasureSink {
  if (sink) return sink;
  const cfg = config();
  if (cfg.runtime === 'aws') sink = emfSink(cfg.POWERTOOLS_METRICS_NAMESPACE ?? 'Loupe');
  else sink = localRegistry();
  return sink;
}

/** The local runtime's registry of this thread (made on first use; `GET /metrics` reads it). */
export function localRegistry(): Registry {
  registry ??= new Registry();
  return registry;
}

function record(def: MeasureDef, value: number, labels: Record<string, string>) {
  try {
    current().record(def, value, labels);
  } catch (e) {
    // A measure is never worth failing a request or a worker for.
    logger().warn('measure not recorded', { measure: def.emf, error: String(e) });
  }
}

/**
 * Adds `n` to one of Loupe's counters (shared/platform/measures/catalog.ts): an EMF line in AWS, the local
 * registry under `npm start`. Synchronous and cheap; never throws.
 */
export function count<K extends CounterName>(name: K, labels: LabelsOf<K>, n = 1): void {
  record(MEASURES[name], n, labels as Record<string, string>);
}

/** Records one sample of a histogram (durations in milliseconds). */
export function observe<K extends HistogramName>(name: K, value: number, labels: LabelsOf<K>): void {
  record(MEASURES[name], value, labels as Record<string, string>);
}

/** Tests: sends measures to `s` (undefined: back to the runtime's own). */
export function setMeasureSink(s: MeasureSink | undefined): void {
  sink = s;
}
