// A chart with its words: a figure whose caption names it, a legend, and the numbers as a table
// for screen readers and keyboard users (the canvas itself is hidden from assistive technology).
// The drawing (uPlot) is its own chunk, fetched when a chart is first shown, so the first load
// and the screens without charts never carry it.
import { lazy } from '../../lib/lazy';
import type { ChartData } from './types';
import { StackedBars } from './StackedBars';
import '../../styles/screens.css';

const ChartCanvas = lazy<{ data: ChartData; height?: number }>(() => import('./ChartCanvas').then((m) => m.ChartCanvas), 'Loading the chart…');

export function Chart({ id, title, data, height, table = true }: { id: string; title: string; data: ChartData; height?: number; table?: boolean }) {
  // Stacked bars over time (the home page) are drawn in SVG without the library (StackedBars.tsx).
  const light = data.kind === 'stacked';
  const xText = (i: number) => (data.categories ? data.categories[i] : data.time ? new Date(data.x[i] * 1000).toLocaleString() : String(data.x[i]));
  return (
    <figure class="chart" id={id} aria-labelledby={`${id}-title`}>
      <figcaption id={`${id}-title`}>{title}</figcaption>
      {light ? <StackedBars data={data} /> : <ChartCanvas data={data} height={height} />}
      <ul class="chart-legend" aria-label={`Legend of ${title}`}>
        {[...data.series, ...(data.lines ?? [])].map((s) => <li key={s.label}><span class={`swatch swatch-${s.color}`} aria-hidden="true" />{s.label}</li>)}
      </ul>
      {table ? (
        <details class="chart-data">
          <summary>Data of the chart</summary>
          <div class="table-wrap" tabIndex={0} role="region" aria-label={`Data of ${title}`}>
            <table class="striped">
              <caption class="visually-hidden">{title}</caption>
              <thead><tr><th scope="col">{data.xLabel ?? 'x'}</th>{data.series.map((s) => <th scope="col" key={s.label}>{s.label}</th>)}</tr></thead>
              <tbody>
                {data.x.slice(0, 500).map((_, i) => (
                  <tr key={i}><th scope="row">{xText(i)}</th>{data.series.map((s) => <td class="num" key={s.label}>{s.values[i] ?? ''}</td>)}</tr>
                ))}
              </tbody>
            </table>
          </div>
        </details>
      ) : null}
    </figure>
  );
}
