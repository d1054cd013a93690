// Executions by state over time on the home page, drawn as SVG by Preact: a stacked bar per hour or
// day, a y axis with a few round ticks, the first and last times under the bars, and each segment's
// count and time in its <title> (hover). About 2 KB where uPlot is 22 KB as brotli: the home page is
// the first screen after sign-in, and this one chart has no zoom or cursor to need the library
// (docs/ui.md "Issue 28: decisions"). Colours are classes over the palette's custom properties.
import type { ChartData } from './types';

const W = 720; const H = 200; const LEFT = 36; const BOTTOM = 22;

function niceMax(v: number): number {
  if (v <= 5) return Math.max(1, v);
  const p = 10 ** Math.floor(Math.log10(v));
  return [1, 2, 5, 10].map((m) => m * p).find((m) => m >= v) ?? v;
}

export function StackedBars({ data }: { data: ChartData }) {
  const n = data.x.length;
  const totals = data.x.map((_, i) => data.series.reduce((sum, s) => sum + (s.values[i] ?? 0), 0));
  const max = niceMax(Math.max(0, ...totals));
  const step = (W - LEFT) / Math.max(1, n);
  const bar = Math.max(1, step * 0.7);
  const y = (v: number) => (H - BOTTOM) * (1 - v / max);
  const label = (t: number) => new Date(t * 1000).toLocaleString(undefined, data.xLabel === 'Day' ? { dateStyle: 'medium' } : { dateStyle: 'short', timeStyle: 'short' });
  const ticks = [0, max / 2, max].filter((v, i, a) => a.indexOf(v) === i && Number.isInteger(v));
  return (
    <svg class="stacked-bars" viewBox={`0 0 ${W} ${H}`} aria-hidden="true" focusable="false">
      {ticks.map((v) => <g key={v}><line class="grid-line" x1={LEFT} x2={W} y1={y(v)} y2={y(v)} /><text class="axis-text" x={LEFT - 6} y={y(v) + 4} text-anchor="end">{v}</text></g>)}
      {data.x.map((t, i) => {
        let base = 0;
        return (
          <g key={t}>
            {data.series.map((s) => {
              const v = s.values[i] ?? 0;
              if (!v) return null;
              const top = base + v;
              const rect = <rect key={s.label} class={`bar bar-${s.color}`} x={LEFT + i * step + (step - bar) / 2} y={y(top)} width={bar} height={y(base) - y(top)}><title>{`${label(t)}: ${v} ${s.label}`}</title></rect>;
              base = top;
              return rect;
            })}
          </g>
        );
      })}
      {n ? <><text class="axis-text" x={LEFT} y={H - 6}>{label(data.x[0])}</text><text class="axis-text" x={W} y={H - 6} text-anchor="end">{label(data.x[n - 1])}</text></> : null}
    </svg>
  );
}
