// Each attempt of each task run: the finished ones as the server recorded them (state, why it
// started: first try, a retry or handed back after a lost lease; its log lines), and the one
// under way for a run that has not ended. A run that never started has no attempt.
import { Table, when } from '../../components/ui';
import type { Body } from '../../api/types';
import { StateTag, duration } from './states';

type Execution = Body<'/workflows/v1/{ws}/executions/{id}', 'get'>;
type TaskRun = Execution['task_runs'][number];

interface Row { key: string; run: TaskRun; attempt: number; state: string; reason: string | null; lines: number | null; started: string | null; ended: string | null }

const WHY: Record<string, string> = { retry: 'retry' };

export function attemptRows(e: Execution, ordered: TaskRun[]): Row[] {
  const byRun = new Map<string, Execution['attempts']>();
  for (const a of e.attempts) byRun.set(a.task_run_id, [...(byRun.get(a.task_run_id) ?? []), a]);
  const rows: Row[] = [];
  for (const run of ordered) {
    const done = byRun.get(run.id) ?? [];
    for (const a of done) rows.push({ key: `${run.id}/${a.attempt}`, run, attempt: a.attempt, state: a.state, reason: a.reason, lines: a.log_lines, started: a.started_at, ended: a.ended_at });
    // The attempt under way is not recorded until it ends.
    if (!run.ended_at && run.started_at && !done.some((a) => a.attempt === run.attempt)) {
      rows.push({ key: `${run.id}/${run.attempt}`, run, attempt: run.attempt, state: run.state, reason: null, lines: null, started: run.started_at, ended: null });
    }
  }
  return rows;
}

export function Attempts({ e, ordered, names, now }: { e: Execution; ordered: TaskRun[]; names: Map<string, string>; now: number }) {
  const rows = attemptRows(e, ordered);
  return (
    <section aria-labelledby="h-attempts">
      <h2 id="h-attempts">Attempts</h2>
      {rows.length === 0 ? <p class="muted" id="no-attempts">No attempt has started yet.</p> : (
        <Table caption="Attempts of each task run" headers={['Task', 'Attempt', 'State', 'Why it ran', 'Started', 'Duration', 'Log lines']} id="attempts">
          {rows.map((r) => (
            <tr key={r.key} data-task={r.run.task_id} data-attempt={r.attempt}>
              <th scope="row">{names.get(r.run.id)}</th>
              <td class="num">{r.attempt}</td>
              <td><StateTag state={r.state} /></td>
              <td>{r.reason ? (WHY[r.reason] ?? r.reason) : r.attempt <= 1 ? 'first try' : '—'}</td>
              <td>{when(r.started)}</td>
              <td>{duration(r.started, r.ended, now)}</td>
              <td class="num">{r.lines ?? '—'}</td>
            </tr>
          ))}
        </Table>
      )}
    </section>
  );
}
