// One execution, in tabs as Kestra's: Gantt (a time line of the task runs, their table and
// attempts), Logs (live, filling the tab and following), Topology (the flow's graph with each
// task's state), Outputs (inputs and outputs) and Files; the tab is in the URL (`?tab=logs`).
// Above the tabs: the state (polled every second while it runs, in a live region), what started
// it, times to the second (the millisecond on hover), and the ws_editor's actions: Kill (while
// it runs) and Re-run (a new execution of the same flow with the same inputs).
import { useEffect, useState } from 'preact/hooks';
import { api, ok } from '../../api/client';
import { Button, Table } from '../../components/ui';
import { ShortId } from '../../components/Copy';
import { Tabs } from '../../components/Tabs';
import { may } from '../../lib/access';
import { clearMessages, say, sayAfterNavigation } from '../../lib/messages';
import { href, replaceQuery } from '../../lib/router';
import { reportTo, useSession } from '../../lib/session';
import { Time } from '../../lib/time';
import { useLoad } from '../../lib/useLoad';
import { Topology } from '../flows/Topology';
import { Attempts } from './Attempts';
import { Gantt } from './Gantt';
import { Logs } from './Logs';
import { depthOf, runName, taskStates, treeOrder } from './runs';
import { StateTag, TERMINAL, duration } from './states';
import '../../styles/screens.css';

const TABS = [{ id: 'gantt', label: 'Gantt' }, { id: 'logs', label: 'Logs' }, { id: 'topology', label: 'Topology' }, { id: 'outputs', label: 'Outputs' }, { id: 'files', label: 'Files' }];

/** What started an execution: a person through the API, a schedule's slot, another execution's end, a webhook. */
function TriggeredBy({ ws, trigger }: { ws: string; trigger: unknown }) {
  const t = (trigger ?? {}) as { type?: unknown; id?: unknown; user?: unknown; date?: unknown; executionId?: unknown };
  const text = (v: unknown) => (typeof v === 'string' ? v : '');
  switch (t.type) {
    case 'api': return <>{text(t.user) || 'the API'}</>;
    case 'schedule': return <>schedule <code>{text(t.id)}</code> (slot <Time iso={text(t.date)} />)</>;
    case 'flow': return <>flow trigger <code>{text(t.id)}</code> after execution {typeof t.executionId === 'string' ? <a href={href.execution(ws, t.executionId)}><code>{t.executionId.slice(0, 8)}</code></a> : null}</>;
    case 'webhook': return <>webhook trigger <code>{text(t.id)}</code></>;
    default: return <>{text(t.type) || '—'}</>;
  }
}

export function ExecutionPage({ ws, id, tab }: { ws: string; id: string; tab: string }) {
  const session = useSession();
  const canRun = may(session.me, ws, 'ws_editor');
  const current = TABS.some((t) => t.id === tab) ? tab : 'gantt';
  const ex = useLoad(() => ok(api.GET('/workflows/v1/{ws}/executions/{id}', { params: { path: { ws, id } } })), [ws, id]);
  const files = useLoad(() => ok(api.GET('/workflows/v1/{ws}/executions/{id}/files', { params: { path: { ws, id } } })), [ws, id]);
  const e = ex.data;
  // The flow's source at the revision that ran, for the topology.
  const source = useLoad(async () => (e ? (await ok(api.GET('/workflows/v1/{ws}/flows/{namespace}/{id}/revisions/{revision}', { params: { path: { ws, namespace: e.namespace, id: e.flow_id, revision: e.flow_revision } } }))).source : null),
    [ws, e?.namespace, e?.flow_id, e?.flow_revision, current === 'topology']);
  const [now, setNow] = useState(Date.now());
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
  const names = new Map(ordered.map((r) => [r.id, runName(r)]));

  return (
    <>
      <nav aria-label="Breadcrumb" class="crumbs"><ul><li><a href={href.executions(ws)}>Executions</a></li><li><a href={href.flow(ws, e.namespace, e.flow_id)}>{e.namespace}.{e.flow_id}</a></li><li>{id.slice(0, 8)}</li></ul></nav>
      <div class="title-row">
        <h1>Execution <code>{id.slice(0, 8)}</code></h1>
        <div class="actions">
          {canRun && running ? <Button class="danger" id="kill" onClick={kill} disabled={e.state === 'KILLING'}>Kill</Button> : null}
          {canRun && !running ? <Button id="rerun" onClick={rerun}>Re-run</Button> : null}
        </div>
      </div>
      <dl class="facts facts-row">
        <dt>State</dt><dd><span id="execution-state" role="status" aria-live="polite"><StateTag state={e.state} /></span></dd>
        <dt>Id</dt><dd><ShortId id={e.id} what="execution id" /></dd>
        <dt>Flow</dt><dd><a href={href.flow(ws, e.namespace, e.flow_id)}>{e.namespace}.{e.flow_id}</a> (revision {e.flow_revision})</dd>
        <dt>Started by</dt><dd id="execution-trigger"><TriggeredBy ws={ws} trigger={e.trigger} /></dd>
        <dt>Created</dt><dd><Time iso={e.created_at} /></dd>
        <dt>Duration</dt><dd id="execution-duration">{duration(e.started_at, e.ended_at, now)}</dd>
        {e.error ? <><dt>Error</dt><dd class="error-text" id="execution-error">{e.error}</dd></> : null}
      </dl>
      <Tabs id="execution-tabs" label="Execution views" tabs={TABS} current={current} onSelect={(t) => replaceQuery(href.execution(ws, id), { tab: t === 'gantt' ? undefined : t })}>
        {current === 'gantt' ? <>
          <Gantt e={e} ordered={ordered} now={now} />
          <section aria-labelledby="h-runs">
            <h2 id="h-runs">Task runs</h2>
            {ordered.length === 0 ? <p class="muted">No task has started yet.</p> : (
              <Table caption="Task runs in tree order" headers={['Task', 'State', 'Attempt', 'Started', 'Duration']} id="task-runs">
                {ordered.map((r) => (
                  <tr key={r.id} data-task={r.task_id}>
                    <th scope="row" class={`depth-${Math.min(depthOf(r, byId), 6)}`}>{names.get(r.id)}{r.error ? <small class="error-text"><br />{r.error}</small> : null}</th>
                    <td><StateTag state={r.state} /></td>
                    <td class="num">{r.attempt}</td>
                    <td><Time iso={r.started_at} /></td>
                    <td class="num">{duration(r.started_at, r.ended_at, now)}</td>
                  </tr>
                ))}
              </Table>
            )}
          </section>
          <Attempts e={e} ordered={ordered} names={names} now={now} />
        </> : current === 'logs' ? <Logs key={id} ws={ws} id={id} running={running} taskNames={names} />
          : current === 'topology' ? (source.data ? <Topology source={source.data} states={taskStates(e.task_runs)} heading={false} /> : <p aria-busy="true">Reading the flow…</p>)
          : current === 'outputs' ? (
            <div class="grid">
              <section aria-labelledby="h-inputs"><h2 id="h-inputs">Inputs</h2><pre id="execution-inputs" tabIndex={0}>{JSON.stringify(e.inputs, null, 2)}</pre></section>
              <section aria-labelledby="h-outputs"><h2 id="h-outputs">Outputs</h2><pre id="execution-outputs" tabIndex={0}>{JSON.stringify(e.outputs, null, 2)}</pre></section>
            </div>
          ) : (
            <section aria-labelledby="h-files">
              <h2 id="h-files" class="visually-hidden">Files</h2>
              {files.data === undefined ? null : files.data.files.length === 0 ? <p class="muted" id="no-files">{running ? 'No files yet.' : 'This execution wrote no files.'}</p> : (
                <ul id="execution-files">
                  {files.data.files.map((f) => (
                    <li key={f.path}><a href={`/workflows/v1/${encodeURIComponent(ws)}/executions/${encodeURIComponent(id)}/files/download?path=${encodeURIComponent(f.path)}`} download>{f.path}</a> <small class="muted">{f.size} bytes</small></li>
                  ))}
                </ul>
              )}
            </section>
          )}
      </Tabs>
    </>
  );
}
