// The Gantt chart of an execution, as Kestra's: one row per task run in tree order, a time axis
// (offsets from the start, the clock time on hover), each run a bar from its start to its end (or
// now), coloured by state. A bar takes focus and hover: its details (state, attempt, start and end
// to the millisecond, duration, error) show in a tooltip and are its accessible description.
import { useState } from 'preact/hooks';
import { precise, span, Time } from '../../lib/time';
import { StateTag } from './states';
import { depthOf, runName, type Execution, type TaskRun } from './runs';

const STEPS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 15_000, 30_000, 60_000, 120_000, 300_000, 600_000, 900_000, 1_800_000, 3_600_000, 7_200_000, 21_600_000, 43_200_000, 86_400_000];

/** Axis ticks: about five, at a round step. */
export function ticks(total: number): number[] {
  const step = STEPS.find((s) => total / s <= 6) ?? STEPS[STEPS.length - 1];
  const out: number[] = [];
  for (let t = 0; t <= total && out.length < 50; t += step) out.push(t);
  return out;
}

export function Gantt({ e, ordered, now }: { e: Execution; ordered: TaskRun[]; now: number }) {
  const [tip, setTip] = useState<string | null>(null);
  const byId = new Map(e.task_runs.map((r) => [r.id, r]));
  const t0 = Date.parse(e.started_at ?? e.created_at);
  const t1 = Math.max(t0 + 1, e.ended_at ? Date.parse(e.ended_at) : now);
  const total = t1 - t0;
  const share = (t: number) => Math.min(100, Math.max(0, ((t - t0) / total) * 100));
  const pct = (t: number) => `${share(t)}%`;
  // A bar that starts at the very end keeps its few pixels inside the track (a phone's page grew
  // sideways by them); a tooltip right of the middle opens leftwards, so it stays on the page, and a
  // tick near the end is right-aligned on its time (centred, its label's half passed the page's edge).
  const barLeft = (t: number) => `min(${share(t)}%, calc(100% - 4px))`;
  const tipAt = (t: number) => (share(t) > 50 ? { right: `${100 - share(t)}%` } : { left: pct(t) });
  if (ordered.length === 0) return <p class="muted" id="no-task-runs">No task has started yet.</p>;
  return (
    <div class="gantt-chart" id="gantt">
      <div class="gantt-axis" aria-hidden="true">
        <span class="gantt-label" />
        <div class="gantt-scale">{ticks(total).map((t) => <span key={t} class="gantt-tick" style={{ left: pct(t0 + t), ...(share(t0 + t) > 85 ? { transform: 'translateX(-100%)' } : {}) }} title={precise(new Date(t0 + t).toISOString())}>+{span(t)}</span>)}</div>
      </div>
      <ul class="gantt-rows" aria-label={`Task runs of execution ${e.id.slice(0, 8)} on a time line`}>
        {ordered.map((r) => {
          const s = r.started_at ? Date.parse(r.started_at) : null;
          const end = r.ended_at ? Date.parse(r.ended_at) : now;
          const name = runName(r);
          const details = s === null ? `${name}: ${r.state}, not started` : `${name}: ${r.state}, attempt ${r.attempt}, started ${precise(r.started_at!)}${r.ended_at ? `, ended ${precise(r.ended_at)}` : ', still running'}, ${span(end - s)}`;
          return (
            <li key={r.id} class="gantt-row" data-task={r.task_id} data-run={name}>
              <span class={`gantt-label depth-${Math.min(depthOf(r, byId), 6)}`}>{name}</span>
              <div class="gantt-track">
                {s !== null ? (
                  <button type="button" class={`gantt-bar state-${r.state.toLowerCase()}`} aria-label={details}
                    style={{ left: barLeft(s), width: `max(4px, ${((Math.max(end, s) - s) / total) * 100}%)` }}
                    onMouseEnter={() => setTip(r.id)} onMouseLeave={() => setTip(null)} onFocus={() => setTip(r.id)} onBlur={() => setTip(null)} />
                ) : <span class="muted small-text">not started</span>}
                {tip === r.id ? (
                  <div class="gantt-tip" role="tooltip" id="gantt-tip" style={tipAt(s ?? t0)}>
                    <strong>{name}</strong> <StateTag state={r.state} /> attempt {r.attempt}<br />
                    Started <Time iso={r.started_at} /> <small class="muted">({precise(r.started_at!).split(' ').slice(-2).join(' ')})</small><br />
                    {r.ended_at ? <>Ended <Time iso={r.ended_at} /><br /></> : null}
                    Duration {span(end - (s ?? end))}{r.error ? <><br /><span class="error-text">{r.error}</span></> : null}
                  </div>
                ) : null}
              </div>
            </li>
          );
        })}
      </ul>
    </div>
  );
}
