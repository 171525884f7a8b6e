import { MEASURES, type MeasureDef } from './catalog';
import type { MeasureSink } from './port';

/** One histogram series: observations per bucket (not cumulative; the last is above every bound). */
interface Series {
  buckets: number[];
  sum: number;
  count: number;
}

/**
 * What a registry holds, as plain data (it crosses worker threads): per Prometheus name, per label values
 * (a JSON array in the measure's label order), a counter's value or a histogram's series.
 */
export interface Snapshot {
  counters: Record<string, Record<string, number>>;
  histograms: Record<string, Record<string, Series>>;
}

/** `map[key]`, made with `make` when missing. */
function entry<T>(map: Record<string, T>, key: string, make: () => T): T {
  let v = map[key];
  if (v === undefined) {
    v = make();
    map[key] = v;
  }
  return v;
}
const emptySeries = (n: number): Series => ({ buckets: new Array(n).fill(0), sum: 0, count: 0 });

const byProm = new Map<string, MeasureDef>(Object.values(MEASURES).map((d) => [d.prom, d]));

/**
 * The local runtime's measures: counters and histograms in this thread's memory, read by `GET /metrics`
 * (infra/local/metrics-endpoint.ts), which merges the snapshots of every handler instance thread.
 */
export class Registry implements MeasureSink {
  private data: Snapshot = { counters: {}, histograms: {} };

  record(def: MeasureDef, value: number, labels: Record<string, string>): void {
    if (!Number.isFinite(value)) return;
    const key = JSON.stringify(def.labels.map((l) => labels[l] ?? ''));
    if (def.kind === 'counter') {
      const series = entry<Record<string, number>>(this.data.counters, def.prom, () => ({}));
      series[key] = (series[key] ?? 0) + value;
      return;
    }
    const bounds = def.buckets ?? [];
    const all = entry(this.data.histograms, def.prom, () => ({}));
    const s = entry(all, key, () => emptySeries(bounds.length + 1));
    let i = 0;
    while (i < bounds.length && value > bounds[i]) i++;
    s.buckets[i]++;
    s.sum += value;
    s.count++;
  }

  snapshot(): Snapshot {
    return structuredClone(this.data);
  }

  reset(): void {
    this.data = { counters: {}, histograms: {} };
  }
}

/** Adds snapshots together (the instance threads' and the main thread's). */
export function mergeSnapshots(all: Snapshot[]): Snapshot {
  const out: Snapshot = { counters: {}, histograms: {} };
  for (const s of all) {
    for (const [name, series] of Object.entries(s.counters)) {
      const o = entry<Record<string, number>>(out.counters, name, () => ({}));
      for (const [k, v] of Object.entries(series)) o[k] = (o[k] ?? 0) + v;
    }
    for (const [name, series] of Object.entries(s.histograms)) {
      const o = entry(out.histograms, name, () => ({}));
      for (const [k, v] of Object.entries(series)) {
        const t = entry(o, k, () => emptySeries(v.buckets.length));
        v.buckets.forEach((n, i) => {
          t.buckets[i] = (t.buckets[i] ?? 0) + n;
        });
        t.sum += v.sum;
        t.count += v.count;
      }
    }
  }
  return out;
}

const escapeLabel = (v: string) => v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
const escapeHelp = (v: string) => v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
/** Milliseconds are shown in seconds (Prometheus' base unit); counts and cents as they are. */
const scale = (def: MeasureDef, v: number) => (def.unit === 'ms' ? v / 1000 : v);
const num = (v: number) => (Number.isInteger(v) ? String(v) : String(Number(v.toPrecision(12))));

function labelText(def: MeasureDef, key: string, extra?: [string, string]): string {
  const values = JSON.parse(key) as string[];
  const pairs = def.labels.map((l, i) => `${l}="${escapeLabel(values[i] ?? '')}"`);
  if (extra) pairs.push(`${extra[0]}="${escapeLabel(extra[1])}"`);
  return pairs.length ? `{${pairs.join(',')}}` : '';
}

/**
 * The Prometheus text exposition format (version 0.0.4) of a snapshot: every measure of the catalog with
 * its HELP and TYPE (a measure without labels shows 0 before its first observation), then `extra` lines
 * (process figures).
 */
export function renderPrometheus(s: Snapshot, extra: string[] = []): string {
  const lines: string[] = [];
  for (const def of Object.values(MEASURES) as MeasureDef[]) {
    lines.push(`# HELP ${def.prom} ${escapeHelp(def.help)}`, `# TYPE ${def.prom} ${def.kind}`);
    const none = JSON.stringify([]);
    if (def.kind === 'counter') {
      const series = s.counters[def.prom] ?? (def.labels.length ? {} : { [none]: 0 });
      for (const [k, v] of Object.entries(series)) lines.push(`${def.prom}${labelText(def, k)} ${num(v)}`);
      continue;
    }
    const bounds = def.buckets ?? [];
    const series =
      s.histograms[def.prom] ??
      (def.labels.length
        ? {}
        : { [none]: { buckets: new Array(bounds.length + 1).fill(0), sum: 0, count: 0 } });
    for (const [k, h] of Object.entries(series)) {
      let cumulative = 0;
      bounds.forEach((b, i) => {
        cumulative += h.buckets[i] ?? 0;
        lines.push(`${def.prom}_bucket${labelText(def, k, ['le', num(scale(def, b))])} ${cumulative}`);
      });
      lines.push(`${def.prom}_bucket${labelText(def, k, ['le', '+Inf'])} ${h.count}`);
      lines.push(`${def.prom}_sum${labelText(def, k)} ${num(scale(def, h.sum))}`);
      lines.push(`${def.prom}_count${labelText(def, k)} ${h.count}`);
    }
  }
  lines.push(...extra);
  return `${lines.join('\n')}\n`;
}

/** The measure of a Prometheus name (tests and docs). */
export const measureOfProm = (name: string) => byProm.get(name);
