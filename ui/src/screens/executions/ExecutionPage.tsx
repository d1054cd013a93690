// One execution: its state (polled while it runs), the task-run tree with a time bar per run
// (a small Gantt chart), attempts, inputs and outputs, files to download, live logs, and the
// actions a ws_editor has: kill (while it runs) and re-run (a new execution of the same flow with
// the same inputs, like Kestra's "replay" from the start).
import { useEffect, useState } from 'preact/hooks';
import { api, ok } from '../../api/client';
import type { Body } from '../../api/types';
import { Button, Table, when } from '../../components/ui';
import { may } from '../../lib/access';
import { clearMessages, say, sayAfterNavigation } from '../../lib/messages';
import { href } from '../../lib/router';
import { reportTo, useSession } from '../../lib/session';
import { useLoad } from '../../lib/useLoad';
import { Attempts } from './Attempts';
import { Logs } from './Logs';
import { StateTag, TERMINAL, duration } from './states';

type Execution = Body<'/workflows/v1/{ws}/executions/{id}', 'get'>;
type TaskRun = Execution['task_runs'][number];

function depthOf(run: TaskRun, byId: Map<string, TaskRun>): number {
  let d = 0;
  for (let p = run.parent_id; p && d < 50; p = byId.get(p)?.parent_id ?? null) d++;
  return d;
}

/** Task runs in tree order: each parent followed by its children (by start time). */
function treeOrder(runs: TaskRun[]): TaskRun[] {
  const kids = new Map<string | null, TaskRun[]>();
  for (const r of runs) kids.set(r.parent_id, [...(kids.get(r.parent_id) ?? []), r]);
  const out: TaskRun[] = [];
  const visit = (parent: string | null, depth: number) => {
    if (depth > 50) return;
    for (const r of kids.get(parent) ?? []) { out.push(r); visit(r.id, depth + 1); }
  };
  visit(null, 0);
  return out.length === runs.length ? out : runs;
}

function Bar({ run, t0, t1 }: { run: TaskRun; t0: number; t1: number }) {
  if (!run.started_at || t1 <= t0) return null;
  const s = Date.parse(run.started_at);
  const e = run.ended_at ? Date.parse(run.ended_at) : t1;
  const left = ((s - t0) / (t1 - t0)) * 100;
  const width = Math.max(0.5, ((e - s) / (t1 - t0)) * 100);
  // Set through the CSSOM (Preact's style object), which the CSP's style-src does not govern.
  return <div class="gantt" aria-hidden="true"><div class={`gantt-bar state-${run.state.toLowerCase()}`} style={{ marginLeft: `${left}%`, width: `${Math.min(width, 100 - left)}%` }} /></div>;
}

/** What started an execution: a person through the API, a schedule's slot, another execution's end, a webhook. */
function TriggeredBy({ ws, trigger }: { ws: string; trigger: unknown }) {
  const t = (trigger ?? {}) as { type?: unknown; id?: unknown; user?: unknown; date?: unknown; executionId?: unknown };
  const text = (v: unknown) => (typeof v === 'string' ? v : '');
  switch (t.type) {
    case 'api': return <>{text(t.user) || 'the API'}</>;
    case 'schedule': return <>schedule <code>{text(t.id)}</code> (slot {when(text(t.date))})</>;
    case 'flow': return <>flow trigger <code>{text(t.id)}</code> after execution {typeof t.executionId === 'string' ? <a href={href.execution(ws, t.executionId)}><code>{t.executionId.slice(0, 8)}</code></a> : null}</>;
    case 'webhook': return <>webhook trigger <code>{text(t.id)}</code></>;
    default: return <>{text(t.type) || '—'}</>;
  }
}

export function ExecutionPage({ ws, id }: { ws: string; id: string }) {
  const session = useSession();
  const canRun = may(session.me, ws, 'ws_editor');
  const ex = useLoad(() => ok(api.GET('/workflows/v1/{ws}/executions/{id}', { params: { path: { ws, id } } })), [ws, id]);
  const files = useLoad(() => ok(api.GET('/workflows/v1/{ws}/executions/{id}/files', { params: { path: { ws, id } } })), [ws, id]);
  const [now, setNow] = useState(Date.now());
  const e = ex.data;
  const running = e ? !TERMINAL.has(e.state) : false;

  useEffect(() => { document.title = `Execution ${id.slice(0, 8)} · svc`; }, [id]);
  useEffect(() => {
    if (!running) return;
    const t = setInterval(() => { setNow(Date.now()); void ex.reload(); }, 1000);
    return () => clearInterval(t);
  }, [running, id]);
  // When it ends, its files are final.
  useEffect(() => { if (e && !running) void files.reload(); }, [running]);

  const kill = async () => {
    if (!window.confirm(`Kill execution ${id.slice(0, 8)}? Queued tasks are cancelled and running ones stopped.`)) return;
    clearMessages();
    try {
      const r = await ok(api.POST('/workflows/v1/{ws}/executions/{id}/kill', { params: { path: { ws, id } } }));
      await ex.reload();
      say(`Kill requested: the execution is ${r.state}.`);
    } catch (err) { reportTo(session)(err); }
  };
  const rerun = async () => {
    if (!e) return;
    clearMessages();
    try {
      const n = await ok(api.POST('/workflows/v1/{ws}/executions/{namespace}/{id}', { params: { path: { ws, namespace: e.namespace, id: e.flow_id } }, body: { inputs: e.inputs } }));
      sayAfterNavigation(`Started execution ${n.id} with the same inputs.`);
      location.hash = href.execution(ws, n.id);
    } catch (err) { reportTo(session)(err); }
  };

  if (!e) return <><h1>Execution <code>{id.slice(0, 8)}</code></h1>{ex.error ? null : <p aria-busy="true">Loading the execution…</p>}</>;
  const byId = new Map(e.task_runs.map((r) => [r.id, r]));
  const ordered = treeOrder(e.task_runs);
  const t0 = Date.parse(e.started_at ?? e.created_at);
  const t1 = e.ended_at ? Date.parse(e.ended_at) : now;
  const names = new Map(ordered.map((r) => [r.id, r.task_id + (r.iteration !== null && r.iteration !== undefined ? ` [${JSON.stringify(r.iteration)}]` : '')]));

  return (
    <>
      <nav aria-label="Breadcrumb" class="crumbs"><ul><li><a href={href.executions(ws)}>Executions</a></li><li>{id.slice(0, 8)}</li></ul></nav>
      <div class="title-row">
        <h1>Execution <code>{id.slice(0, 8)}</code></h1>
        <div class="actions">
          {canRun && running ? <Button class="danger" id="kill" onClick={kill} disabled={e.state === 'KILLING'}>Kill</Button> : null}
          {canRun && !running ? <Button id="rerun" onClick={rerun}>Re-run</Button> : null}
        </div>
      </div>
      <dl class="facts">
        <dt>Flow</dt><dd><a href={href.flow(ws, e.namespace, e.flow_id)}>{e.namespace}.{e.flow_id}</a> (revision {e.flow_revision})</dd>
        <dt>State</dt><dd><span id="execution-state" role="status" aria-live="polite"><StateTag state={e.state} /></span></dd>
        <dt>Started by</dt><dd id="execution-trigger"><TriggeredBy ws={ws} trigger={e.trigger} /></dd>
        <dt>Created</dt><dd>{when(e.created_at)}</dd>
        <dt>Duration</dt><dd>{duration(e.started_at, e.ended_at, now)}</dd>
        {e.error ? <><dt>Error</dt><dd class="error-text" id="execution-error">{e.error}</dd></> : null}
      </dl>
      <section aria-labelledby="h-runs">
        <h2 id="h-runs">Task runs</h2>
        {ordered.length === 0 ? <p class="muted">No task has started yet.</p> : (
          <Table caption="Task runs in tree order" headers={['Task', 'State', 'Attempt', 'Started', 'Duration', 'Timeline']} id="task-runs">
            {ordered.map((r) => (
              <tr key={r.id} data-task={r.task_id}>
                <th scope="row" class={`depth-${Math.min(depthOf(r, byId), 6)}`}>{names.get(r.id)}{r.error ? <small class="error-text"><br />{r.error}</small> : null}</th>
                <td><StateTag state={r.state} /></td>
                <td class="num">{r.attempt}</td>
                <td>{when(r.started_at)}</td>
                <td>{duration(r.started_at, r.ended_at, now)}</td>
                <td class="timeline"><Bar run={r} t0={t0} t1={t1} /></td>
              </tr>
            ))}
          </Table>
        )}
      </section>
      <Attempts e={e} ordered={ordered} names={names} now={now} />
      <div class="grid">
        <section aria-labelledby="h-inputs"><h2 id="h-inputs">Inputs</h2><pre id="execution-inputs">{JSON.stringify(e.inputs, null, 2)}</pre></section>
        <section aria-labelledby="h-outputs"><h2 id="h-outputs">Outputs</h2><pre id="execution-outputs">{JSON.stringify(e.outputs, null, 2)}</pre></section>
      </div>
      <section aria-labelledby="h-files">
        <h2 id="h-files">Files</h2>
        {files.data === undefined ? null : files.data.files.length === 0 ? <p class="muted" id="no-files">{running ? 'No files yet.' : 'This execution wrote no files.'}</p> : (
          <ul id="execution-files">
            {files.data.files.map((f) => (
              <li key={f.path}><a href={`/workflows/v1/${encodeURIComponent(ws)}/executions/${encodeURIComponent(id)}/files/download?path=${encodeURIComponent(f.path)}`} download>{f.path}</a> <small class="muted">{f.size} bytes</small></li>
            ))}
          </ul>
        )}
      </section>
      <Logs key={id} ws={ws} id={id} running={running} taskNames={names} />
    </>
  );
}
