// The query history (`GET .../queries`): the person's own queries newest first (a ws_admin sees
// every member's), searched by SQL, engine or state in the page, each opening in the console with
// its SQL, state and result.
import { useState } from 'preact/hooks';
import { api, ok } from '../../api/client';
import { Table, when } from '../../components/ui';
import { CopyButton } from '../../components/Copy';
import { href } from '../../lib/router';
import { useSession } from '../../lib/session';
import { useLoad } from '../../lib/useLoad';
import { StateTag } from '../executions/states';

export function QueryHistory({ ws, tick, current }: { ws: string; tick: number; current?: string }) {
  const me = useSession().me.user;
  const [q, setQ] = useState('');
  const list = useLoad(async () => (await ok(api.GET('/api/workspaces/{ws}/queries', { params: { path: { ws }, query: { limit: 200 } } }))).queries, [ws, tick]);
  const needle = q.trim().toLowerCase();
  const shown = (list.data ?? []).filter((x) => !needle || `${x.sql}\n${x.engine}\n${x.state}`.toLowerCase().includes(needle));
  return (
    <section aria-labelledby="history-title">
      <h2 id="history-title" class="visually-hidden">History</h2>
      <div class="row">
        <div class="grow"><label for="history-search">Search the history</label>
          <input id="history-search" type="search" value={q} maxLength={200} placeholder="SQL, engine or state" onInput={(e) => setQ(e.currentTarget.value)} /></div>
      </div>
      {list.data === undefined ? (list.error ? null : <p aria-busy="true">Loading the history…</p>) : shown.length === 0 ? <p class="empty" id="no-history">{list.data.length ? 'No query matches.' : 'No queries yet.'}</p> : (
        <Table caption="Query history, newest first" headers={['Query', 'SQL', 'Engine', 'State', 'Rows', 'By', 'Started']} id="history-table">
          {shown.map((x) => (
            <tr key={x.id} data-query={x.id}>
              <th scope="row"><a href={href.sql(ws, { query: x.id })} aria-current={x.id === current ? 'true' : undefined}><code title={x.id}>{x.id.slice(0, 8)}</code></a><CopyButton text={x.id} what="query id" label={`Copy query id ${x.id.slice(0, 8)}`} /></th>
              <td><code class="sql-snippet">{x.sql.length > 120 ? `${x.sql.slice(0, 120)}…` : x.sql}</code></td>
              <td>{x.engine}</td>
              <td><StateTag state={x.state} /></td>
              <td class="num">{x.rows ?? ''}{x.truncated ? ' (truncated)' : ''}</td>
              <td>{x.principal === me.id ? 'you' : <code title={x.principal ?? ''}>{(x.principal ?? '').slice(0, 8)}</code>}</td>
              <td>{when(x.created_at)}</td>
            </tr>
          ))}
        </Table>
      )}
    </section>
  );
}
