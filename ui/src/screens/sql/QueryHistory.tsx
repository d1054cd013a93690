// The query history (`GET .../queries`): the person's own queries newest first (a ws_admin sees
// every member's), each opening in the console with its SQL, state and result.
import { api, ok } from '../../api/client';
import { Table, when } from '../../components/ui';
import { href } from '../../lib/router';
import { useSession } from '../../lib/session';
import { useLoad } from '../../lib/useLoad';
import { StateTag } from '../executions/states';

export function QueryHistory({ ws, tick, current }: { ws: string; tick: number; current?: string }) {
  const me = useSession().me.user;
  const list = useLoad(async () => (await ok(api.GET('/api/workspaces/{ws}/queries', { params: { path: { ws }, query: { limit: 50 } } }))).queries, [ws, tick]);
  return (
    <section aria-labelledby="history-title">
      <h2 id="history-title">History</h2>
      {list.data === undefined ? (list.error ? null : <p aria-busy="true">Loading the history…</p>) : list.data.length === 0 ? <p class="empty">No queries yet.</p> : (
        <Table caption="Query history, newest first" headers={['Query', 'SQL', 'Engine', 'State', 'Rows', 'By', 'Started']} id="history-table">
          {list.data.map((q) => (
            <tr key={q.id} data-query={q.id}>
              <th scope="row"><a href={href.sql(ws, { query: q.id })} aria-current={q.id === current ? 'true' : undefined}><code>{q.id.slice(0, 8)}</code></a></th>
              <td><code class="sql-snippet">{q.sql.length > 120 ? `${q.sql.slice(0, 120)}…` : q.sql}</code></td>
              <td>{q.engine}</td>
              <td><StateTag state={q.state} /></td>
              <td class="num">{q.rows ?? ''}{q.truncated ? ' (truncated)' : ''}</td>
              <td>{q.principal === me.id ? 'you' : <code title={q.principal ?? ''}>{(q.principal ?? '').slice(0, 8)}</code>}</td>
              <td>{when(q.created_at)}</td>
            </tr>
          ))}
        </Table>
      )}
    </section>
  );
}
