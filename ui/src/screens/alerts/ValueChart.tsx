// An alert's evaluated value against its threshold over time: one point per evaluation (the
// number of rows, or the value of the single row, as the condition reads it), the threshold as a
// dashed line. Evaluations without a number (errors, runs under way) leave a gap.
import { Chart } from '../../components/chart/Chart';
import type { Alert } from './alerts';

interface Evaluation { scheduled_for: string; value: unknown; outcome: string | null }

export function ValueChart({ alert, evaluations }: { alert: Alert; evaluations: Evaluation[] }) {
  const c = alert.condition as { type?: string; threshold?: number; op?: string; column?: string } | null;
  const points = evaluations.map((e) => ({ t: Date.parse(e.scheduled_for) / 1000, v: typeof e.value === 'number' ? e.value : Number.isFinite(Number(e.value)) && e.value !== null && e.value !== '' ? Number(e.value) : null }))
    .filter((p) => Number.isFinite(p.t)).sort((a, b) => a.t - b.t);
  if (points.length === 0 || typeof c?.threshold !== 'number') return <p class="empty" id="no-value-chart">No evaluation yet to chart.</p>;
  const what = c.type === 'value' ? `value${c.column ? ` of ${c.column}` : ''}` : 'rows';
  return (
    <Chart id="value-chart" title={`Evaluated ${what} against the threshold (${c.op} ${c.threshold})`}
      data={{ kind: 'line', time: true, x: points.map((p) => p.t), series: [{ label: what, color: '1', values: points.map((p) => p.v) }], lines: [{ label: `threshold ${c.threshold}`, value: c.threshold, color: 'danger' }], xLabel: 'Evaluation', yLabel: what }} />
  );
}
