// A chart of a result in one click: bar, line or scatter, with the X axis and the Y columns picked
// from the result's columns (numbers for Y). The first choice is made for the person: a text or
// time column as X when there is one, the first number column as Y.
import { useState } from 'preact/hooks';
import { Chart } from '../../components/chart/Chart';
import type { ChartData } from '../../components/chart/types';
import { isNumeric } from './ResultGrid';

const TIME = /^(date|timestamp|time)/i;
const KINDS = [['bar', 'Bar'], ['line', 'Line'], ['scatter', 'Scatter']] as const;
type Kind = (typeof KINDS)[number][0];
const PALETTE = ['1', '2', '3', '4'];

const num = (v: unknown): number | null => (v === null || v === undefined || v === '' ? null : Number.isFinite(Number(v)) ? Number(v) : null);

export function chartOf(columns: Array<{ name: string; type: string }>, rows: unknown[][], kind: Kind, x: number, ys: number[]): ChartData | null {
  if (ys.length === 0 || rows.length === 0) return null;
  const xType = columns[x]?.type ?? '';
  const series = ys.map((j, k) => ({ label: columns[j].name, color: PALETTE[k % PALETTE.length], values: rows.map((r) => num(r[j])) }));
  if (TIME.test(xType)) {
    const order = rows.map((r, i) => ({ t: Date.parse(String(r[x])) / 1000, i })).filter((p) => Number.isFinite(p.t)).sort((a, b) => a.t - b.t);
    return { kind, time: true, x: order.map((p) => p.t), series: series.map((s) => ({ ...s, values: order.map((p) => s.values[p.i]) })), xLabel: columns[x].name };
  }
  if (isNumeric(xType) && kind !== 'bar') {
    const order = rows.map((r, i) => ({ v: num(r[x]), i })).filter((p): p is { v: number; i: number } => p.v !== null).sort((a, b) => a.v - b.v);
    return { kind, x: order.map((p) => p.v), series: series.map((s) => ({ ...s, values: order.map((p) => s.values[p.i]) })), xLabel: columns[x].name };
  }
  return { kind, x: rows.map((_, i) => i), categories: rows.map((r) => String(r[x] ?? 'NULL')), series, xLabel: columns[x].name };
}

export function ResultChart({ id, columns, rows }: { id: string; columns: Array<{ name: string; type: string }>; rows: unknown[][] }) {
  const numbers = columns.map((c, i) => (isNumeric(c.type) ? i : -1)).filter((i) => i >= 0);
  const firstText = columns.findIndex((c) => !isNumeric(c.type));
  const [kind, setKind] = useState<Kind>(TIME.test(columns[firstText]?.type ?? '') ? 'line' : 'bar');
  const [x, setX] = useState(firstText >= 0 ? firstText : 0);
  const [ys, setYs] = useState<number[]>(numbers.filter((i) => i !== x).slice(0, 1));
  if (numbers.length === 0) return <p class="empty" id="no-chart">This result has no number column to chart.</p>;
  const data = chartOf(columns, rows, kind, x, ys);
  return (
    <div class="result-chart">
      <form class="row chart-controls" aria-label="Chart settings" onSubmit={(e) => e.preventDefault()}>
        <fieldset class="inline-checks">
          <legend>Chart</legend>
          {KINDS.map(([k, label]) => (
            <label key={k}><input type="radio" name="chart-kind" value={k} checked={kind === k} onChange={() => setKind(k)} /> {label}</label>
          ))}
        </fieldset>
        <div><label for="chart-x">X axis</label>
          <select id="chart-x" value={String(x)} onChange={(e) => setX(Number(e.currentTarget.value))}>
            {columns.map((c, i) => <option key={i} value={String(i)}>{c.name}</option>)}
          </select></div>
        <fieldset class="inline-checks">
          <legend>Y axis</legend>
          {numbers.map((i) => (
            <label key={i}><input type="checkbox" checked={ys.includes(i)} onChange={(e) => setYs(e.currentTarget.checked ? [...ys, i].sort((a, b) => a - b) : ys.filter((j) => j !== i))} /> {columns[i].name}</label>
          ))}
        </fieldset>
      </form>
      {data ? <Chart id={id} title={`${ys.map((i) => columns[i].name).join(', ')} by ${columns[x].name}`} data={data} height={280} />
        : <p class="empty">Choose a column for the Y axis.</p>}
    </div>
  );
}
