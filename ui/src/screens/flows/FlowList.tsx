// Flows of a workspace with their last run's state and their run count: search by namespace (the server's prefix filter: a namespace and its
// children) and by id (in the page), both kept in the URL; a "New flow" button for editors.
import { api, ok } from '../../api/client';
import { RoleTag, Table, when } from '../../components/ui';
import { may } from '../../lib/access';
import { href, replaceQuery } from '../../lib/router';
import { useSession } from '../../lib/session';
import { useLoad } from '../../lib/useLoad';
import { useEffect, useState } from 'preact/hooks';
import { Time } from '../../lib/time';
import { StateTag } from '../executions/states';

export function FlowList({ ws, query }: { ws: string; query: URLSearchParams }) {
  const { me } = useSession();
  const [namespace, setNamespace] = useState(query.get('namespace') ?? '');
  const [q, setQ] = useState(query.get('q') ?? '');
  useEffect(() => { setNamespace(query.get('namespace') ?? ''); setQ(query.get('q') ?? ''); }, [query.toString()]);
  const applied = query.get('namespace') ?? '';
  const flows = useLoad(async () => (await ok(api.GET('/workflows/v1/{ws}/flows', {
    params: { path: { ws }, query: { namespace: applied || undefined, limit: 500, offset: 0 } },
  }))).flows, [ws, applied]);
  const needle = (query.get('q') ?? '').trim().toLowerCase();
  const shown = (flows.data ?? []).filter((f) => !needle || f.id.toLowerCase().includes(needle) || `${f.namespace}.${f.id}`.toLowerCase().includes(needle));

  const search = (ev: Event) => {
    ev.preventDefault();
    replaceQuery(href.flows(ws), { namespace: namespace.trim() || undefined, q: q.trim() || undefined });
  };

  return (
    <>
      <div class="title-row">
        <h1>Flows</h1>
        {may(me, ws, 'ws_editor') ? <a class="button" href={href.flowNew(ws)}>New flow</a> : null}
      </div>
      <form class="row filters" role="search" aria-label="Search flows" onSubmit={search}>
        <div class="grow">
          <label for="flow-ns">Namespace</label>
          <input id="flow-ns" name="namespace" value={namespace} placeholder="sales (and its children)" maxLength={200} spellcheck={false}
            onInput={(e) => setNamespace(e.currentTarget.value)} />
        </div>
        <div class="grow">
          <label for="flow-q">Flow id</label>
          <input id="flow-q" name="q" type="search" value={q} maxLength={100} spellcheck={false} onInput={(e) => setQ(e.currentTarget.value)} />
        </div>
        <button type="submit">Search</button>
      </form>
      {flows.data === undefined ? (flows.error ? null : <p aria-busy="true">Loading flows…</p>) : shown.length === 0 ? (
        <p class="empty" id="no-flows">{flows.data.length === 0 && !applied ? 'No flows yet in this workspace.' : 'No flow matches.'}</p>
      ) : (
        <Table caption={`Flows of ${ws}`} headers={['Flow', 'Namespace', 'Last run', 'Runs', 'Revision', 'Triggers', 'Updated']} id="flows-table">
          {shown.map((f) => (
            <tr key={`${f.namespace}.${f.id}`} data-flow={`${f.namespace}.${f.id}`}>
              <th scope="row"><a href={href.flow(ws, f.namespace, f.id)}>{f.id}</a></th>
              <td><code>{f.namespace}</code></td>
              <td class="last-run">{f.last_execution ? <a href={href.execution(ws, f.last_execution.id)} aria-label={`Last run of ${f.id}: ${f.last_execution.state}`}><StateTag state={f.last_execution.state} /></a> : <span class="muted">never</span>}
                {f.last_execution ? <> <small class="muted"><Time iso={f.last_execution.created_at} /></small></> : null}</td>
              <td class="num"><a href={href.executions(ws, { namespace: f.namespace, flowId: f.id })} aria-label={`${f.runs} runs of ${f.id}`}>{f.runs >= 10_000 ? '10,000+' : f.runs}</a></td>
              <td class="num">{f.revision}</td>
              <td>{f.triggers.length ? f.triggers.map((t, i) => <RoleTag key={i} role={t} />) : <span class="muted">—</span>}</td>
              <td>{when(f.updated_at)}</td>
            </tr>
          ))}
        </Table>
      )}
    </>
  );
}
