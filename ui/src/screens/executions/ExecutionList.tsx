// Executions of a workspace, newest first, with filters kept in the URL (namespace, flow, state,
// started before); refreshed every few seconds while any shown execution is still running.
import { useEffect, useState } from 'preact/hooks';
import { api, ok } from '../../api/client';
import { Table, when } from '../../components/ui';
import { href, replaceQuery } from '../../lib/router';
import { useLoad } from '../../lib/useLoad';
import { StateTag, STATES, TERMINAL, duration } from './states';

type State = (typeof STATES)[number];

export function ExecutionList({ ws, query }: { ws: string; query: URLSearchParams }) {
  const stateParam = query.get('state') ?? '';
  const state: State | '' = (STATES as readonly string[]).includes(stateParam) ? stateParam as State : '';
  const applied = {
    namespace: query.get('namespace') ?? '', flowId: query.get('flowId') ?? '', state,
    before: query.get('before') ?? '',
  };
  const [form, setForm] = useState(applied);
  const list = useLoad(async () => (await ok(api.GET('/workflows/v1/{ws}/executions', {
    params: { path: { ws }, query: {
      namespace: applied.namespace || undefined, flowId: applied.flowId || undefined, state: applied.state || undefined,
      before: applied.before ? new Date(applied.before).toISOString() : undefined, limit: 100,
    } },
  }))).executions, [ws, query.toString()]);

  // Live state: poll while something shown can still change.
  const live = (list.data ?? []).some((e) => !TERMINAL.has(e.state));
  useEffect(() => {
    if (!live) return;
    const t = setInterval(() => { void list.reload(); }, 2000);
    return () => clearInterval(t);
  }, [live, query.toString()]);

  const apply = (ev: Event) => {
    ev.preventDefault();
    replaceQuery(href.executions(ws), { namespace: form.namespace.trim() || undefined, flowId: form.flowId.trim() || undefined, state: form.state || undefined, before: form.before || undefined });
  };
  const set = (k: keyof typeof form) => (e: Event) => setForm({ ...form, [k]: (e.currentTarget as HTMLInputElement).value });

  return (
    <>
      <h1>Executions</h1>
      <form class="row filters" role="search" aria-label="Filter executions" onSubmit={apply}>
        <div class="grow"><label for="ex-ns">Namespace</label><input id="ex-ns" value={form.namespace} maxLength={200} spellcheck={false} onInput={set('namespace')} /></div>
        <div class="grow"><label for="ex-flow">Flow id</label><input id="ex-flow" value={form.flowId} maxLength={100} spellcheck={false} onInput={set('flowId')} /></div>
        <div><label for="ex-state">State</label>
          <select id="ex-state" value={form.state} onChange={set('state')}>
            <option value="">any</option>
            {STATES.map((s) => <option key={s} value={s}>{s}</option>)}
          </select>
        </div>
        <div><label for="ex-before">Started before</label><input id="ex-before" type="datetime-local" value={form.before} onInput={set('before')} /></div>
        <button type="submit">Filter</button>
      </form>
      {list.data === undefined ? (list.error ? null : <p aria-busy="true">Loading executions…</p>) : list.data.length === 0 ? <p class="empty" id="no-executions">No executions match.</p> : (
        <Table caption="Executions, newest first" headers={['Execution', 'Flow', 'State', 'Created', 'Duration']} id="executions-table">
          {list.data.map((e) => (
            <tr key={e.id} data-execution={e.id}>
              <th scope="row"><a href={href.execution(ws, e.id)}><code>{e.id.slice(0, 8)}</code></a></th>
              <td><a href={href.flow(ws, e.namespace, e.flow_id)}>{e.namespace}.{e.flow_id}</a> <small class="muted">rev {e.flow_revision}</small></td>
              <td><StateTag state={e.state} /></td>
              <td>{when(e.created_at)}</td>
              <td>{duration(e.started_at, e.ended_at)}</td>
            </tr>
          ))}
        </Table>
      )}
    </>
  );
}
