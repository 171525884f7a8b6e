import {
  ArcElement,
  BarController,
  BarElement,
  CategoryScale,
  Chart,
  Filler,
  Legend,
  LinearScale,
  LineController,
  LineElement,
  PieController,
  PointElement,
  ScatterController,
  Tooltip,
} from 'chart.js';
import type { ChartKind } from './chart';
import { cell, type Result } from './result';

Chart.register(
  ArcElement,
  BarController,
  BarElement,
  CategoryScale,
  Filler,
  Legend,
  LinearScale,
  LineController,
  LineElement,
  PieController,
  PointElement,
  ScatterController,
  Tooltip,
);

/** Longest category label drawn on an axis; longer ones end in "…" (the tooltip shows the whole label). */
export const MAX_TICK_CHARS = 24;
export const shortLabel = (s: string) => (s.length > MAX_TICK_CHARS ? `${s.slice(0, MAX_TICK_CHARS)}…` : s);

const num = (v: unknown) => (v === null || v === undefined || v === '' ? null : Number(v));

/** Draws one widget's result with Chart.js (only the controllers the five chart types need are registered). */
export function draw(
  canvas: HTMLCanvasElement,
  kind: ChartKind,
  result: Result,
  { x, ys }: { x: string; ys: string[] },
  palette: string[],
): Chart {
  const labels = result.rows.map((r) => cell(r[x]));
  const options = { responsive: true, maintainAspectRatio: false, animation: false as const };
  if (kind === 'PIE') {
    const y = ys[0];
    return new Chart(canvas, {
      type: 'pie',
      data: {
        labels,
        datasets: [
          {
            label: y,
            data: result.rows.map((r) => num(r[y]) ?? 0),
            backgroundColor: labels.map((_, i) => palette[i % palette.length]),
          },
        ],
      },
      options,
    });
  }
  if (kind === 'SCATTER') {
    return new Chart(canvas, {
      type: 'scatter',
      data: {
        datasets: ys.map((y, i) => ({
          label: y,
          data: result.rows.map((r) => ({ x: num(r[x]) ?? 0, y: num(r[y]) ?? 0 })),
          backgroundColor: palette[i % palette.length],
        })),
      },
      options,
    });
  }
  const categoryTicks = {
    ticks: {
      // `this` is the category scale: its label for the tick's value, cut to MAX_TICK_CHARS.
      callback(this: { getLabelForValue(v: number): string }, value: number | string) {
        return shortLabel(this.getLabelForValue(Number(value)));
      },
    },
  };
  return new Chart(canvas, {
    type: kind === 'BAR' ? 'bar' : 'line',
    data: {
      labels,
      datasets: ys.map((y, i) => ({
        label: y,
        data: result.rows.map((r) => num(r[y])),
        borderColor: palette[i % palette.length],
        backgroundColor: kind === 'AREA' ? `${palette[i % palette.length]}55` : palette[i % palette.length],
        fill: kind === 'AREA',
      })),
    },
    options: { ...options, scales: { x: categoryTicks } },
  });
}
