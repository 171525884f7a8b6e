import { useEffect, useRef, useState } from 'preact/hooks';
import { cell, type Result } from './result';

export type ChartKind = 'LINE' | 'BAR' | 'AREA' | 'PIE' | 'SCATTER';

/** Widget config keys the console reads for charts: `x` (a column) and `y` (a column or columns). */
export interface ChartConfig {
  x?: string;
  y?: string | string[];
}

let chartJs: Promise<typeof import('./chart-js')> | undefined;
/** Chart.js, in its own chunk, fetched once on first use. */
export const loadChartJs = () => {
  chartJs ??= import('./chart-js');
  return chartJs;
};

const PALETTE = ['#2563eb', '#16a34a', '#dc2626', '#9333ea', '#ea580c', '#0891b2', '#ca8a04', '#db2777'];

/** Which column is the x axis and which are the series: the config's, else the first column and every numeric one. */
export function axes(result: Result, config: ChartConfig): { x: string; ys: string[] } {
  const x = config.x && result.columns.includes(config.x) ? config.x : result.columns[0];
  const wanted = config.y === undefined ? [] : Array.isArray(config.y) ? config.y : [config.y];
  let ys = wanted.filter((c) => result.columns.includes(c));
  if (!ys.length)
    ys = result.columns.filter(
      (c) => c !== x && result.rows.some((r) => r[c] !== null && r[c] !== '' && !Number.isNaN(Number(r[c]))),
    );
  return { x, ys };
}

/**
 * A chart drawn by Chart.js on a canvas, loaded on first use (its own chunk, outside the initial JavaScript).
 * Labels are drawn as canvas text, never as markup. A text table of the same data follows for screen readers.
 */
export function Chart({
  kind,
  result,
  config,
  title,
}: {
  kind: ChartKind;
  result: Result;
  config: ChartConfig;
  title: string;
}) {
  const canvas = useRef<HTMLCanvasElement>(null);
  const [failed, setFailed] = useState<string | null>(null);
  useEffect(() => {
    let chart: { destroy(): void } | undefined;
    let live = true;
    loadChartJs()
      .then(({ draw }) => {
        if (live && canvas.current) chart = draw(canvas.current, kind, result, axes(result, config), PALETTE);
      })
      .catch((e: Error) => setFailed(e.message));
    return () => {
      live = false;
      chart?.destroy();
    };
  }, [kind, result, config]);
  if (failed) return <p role="alert">The chart could not be drawn: {failed}</p>;
  const { x, ys } = axes(result, config);
  return (
    <div class="chart">
      {/* The canvas fills this box; the Data disclosure follows it, below the axis labels. */}
      <div class="chart-canvas">
        <canvas
          ref={canvas}
          role="img"
          aria-label={`${title}: ${kind.toLowerCase()} chart of ${ys.join(', ')} by ${x}`}
        />
      </div>
      <details class="chart-data">
        <summary>Data</summary>
        <table>
          <thead>
            <tr>
              {[x, ...ys].map((c) => (
                <th scope="col" key={c}>
                  {c}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {result.rows.map((r, i) => (
              <tr key={i}>
                {[x, ...ys].map((c) => (
                  <td key={c}>{cell(r[c])}</td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </details>
    </div>
  );
}
