// A chart drawn by uPlot (a small canvas chart library, about 50 KB; its own chunk, loaded only by
// the screens that chart: Chart.tsx). Colours come from the page's custom properties, read when
// drawn and again when the theme changes, so both themes keep their contrast. uPlot sets its
// element styles through the CSSOM, which the CSP (`style-src 'self'`) does not govern; its
// stylesheet is part of this chunk's CSS file.
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import type { ChartData } from './types';

const css = (name: string) => getComputedStyle(document.documentElement).getPropertyValue(name).trim() || '#888';
const color = (c: string) => css(`--svc-chart-${c}`);

function formatX(d: ChartData, v: number): string {
  if (d.categories) return d.categories[Math.round(v)] ?? '';
  if (d.time) return new Date(v * 1000).toLocaleString(undefined, { dateStyle: 'short', timeStyle: 'medium' });
  return String(v);
}

function options(d: ChartData, width: number, height: number): uPlot.Options {
  const text = css('--pico-muted-color');
  const grid = css('--pico-muted-border-color');
  const bars = uPlot.paths.bars!({ size: [0.7, 64] });
  const points = uPlot.paths.points!();
  const axis = { stroke: text, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 }, font: '12px system-ui, sans-serif' };
  // Stacked bars: series k is drawn as the sum of series 0..k, the tallest first, so each lower
  // sum covers the part of the one before that is not its own.
  const order = d.kind === 'stacked' ? [...d.series.keys()].reverse() : [...d.series.keys()];
  return {
    width, height,
    legend: { show: false },
    cursor: { points: { show: d.kind !== 'bar' && d.kind !== 'stacked' } },
    scales: { x: { time: Boolean(d.time) && !d.categories, distr: d.categories ? 2 : 1 }, y: { range: (_u, min, max) => [Math.min(0, min), max <= 0 ? 1 : max * 1.1] } },
    axes: [
      { ...axis, values: d.categories || !d.time ? (_u, ticks) => ticks.map((t) => formatX(d, t)) : undefined, label: d.xLabel, labelFont: '12px system-ui, sans-serif' },
      { ...axis, label: d.yLabel, labelFont: '12px system-ui, sans-serif', size: 56 },
    ],
    series: [
      {},
      ...order.map((i) => {
        const s = d.series[i];
        const c = color(s.color);
        return d.kind === 'line' ? { label: s.label, stroke: c, width: 2, points: { show: true, size: 6, fill: c } }
          : d.kind === 'scatter' ? { label: s.label, stroke: c, fill: c, width: 0, paths: points, points: { show: true, size: 7, fill: c } }
          : { label: s.label, stroke: c, fill: c, width: 0, paths: bars, points: { show: false } };
      }),
      ...(d.lines ?? []).map((l) => ({ label: l.label, stroke: color(l.color), width: 2, dash: [6, 4], points: { show: false } })),
    ],
  };
}

function data(d: ChartData): uPlot.AlignedData {
  let rows = d.series.map((s) => s.values);
  if (d.kind === 'stacked') {
    const sums: Array<Array<number | null>> = [];
    rows.forEach((vals, k) => sums.push(vals.map((v, i) => (v ?? 0) + (k > 0 ? (sums[k - 1][i] ?? 0) : 0))));
    rows = sums.reverse();
  }
  return [d.x, ...rows, ...(d.lines ?? []).map((l) => d.x.map(() => l.value))] as uPlot.AlignedData;
}

export function ChartCanvas({ data: d, height = 220 }: { data: ChartData; height?: number }) {
  const host = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = host.current!;
    let plot: uPlot | null = null;
    const draw = () => {
      plot?.destroy();
      plot = new uPlot(options(d, Math.max(240, el.clientWidth), height), data(d), el);
    };
    draw();
    // The theme changes the colours (data-theme on <html>, or the system's choice); the width follows the page.
    const themes = new MutationObserver(draw);
    themes.observe(document.documentElement, { attributes: true, attributeFilter: ['data-theme'] });
    const media = matchMedia('(prefers-color-scheme: dark)');
    media.addEventListener('change', draw);
    let last = el.clientWidth;
    const resize = new ResizeObserver(() => {
      if (Math.abs(el.clientWidth - last) < 8) return;
      last = el.clientWidth;
      plot?.setSize({ width: Math.max(240, el.clientWidth), height });
    });
    resize.observe(el);
    return () => { themes.disconnect(); media.removeEventListener('change', draw); resize.disconnect(); plot?.destroy(); };
  }, [d, height]);
  return <div ref={host} class="chart-canvas" aria-hidden="true" />;
}
