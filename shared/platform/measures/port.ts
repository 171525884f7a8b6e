import type { MeasureDef } from './catalog';

/** Where measures go: CloudWatch through EMF lines in AWS (emf.ts), an in-process registry locally (registry.ts). */
export interface MeasureSink {
  /** One observation: `value` adds to a counter, or is one sample of a histogram (in the measure's unit). */
  record(def: MeasureDef, value: number, labels: Record<string, string>): void;
}
