// Alerts of a workspace (`#/w/<ws>/alerts`): each with its state, condition, schedule and last
// evaluation; "New alert" for ws_editor.
import { api, ok } from '../../api/client';
import { Table, when } from '../../components/ui';
import { may } from '../../lib/access';
import { href } from '../../lib/router';
import { useSession } from '../../lib/session';
import { useLoad } from '../../lib/useLoad';
import { conditionText } from './alerts';

export function AlertList({ ws }: { ws: string }) {
  const session = useSession();
  const list = useLoad(async () => (await ok(api.GET('/api/workspaces/{ws}/alerts', { params: { path: { ws } } }))).alerts, [ws]);
  return (
    <>
      <div class="title-row"><h1>Alerts</h1>
        {may(session.me, ws, 'ws_editor') ? <a class="button" href={href.alertNew(ws)}>New alert</a> : null}</div>
      {list.data === undefined ? (list.error ? null : <p aria-busy="true">Loading alerts…</p>) : list.data.length === 0 ? <p class="empty" id="no-alerts">No alerts yet.</p> : (
        <Table caption="Alerts of the workspace" headers={['Alert', 'State', 'Condition', 'Schedule', 'Last evaluated', 'Next']} id="alerts-table">
          {list.data.map((a) => (
            <tr key={a.id} data-alert={a.name}>
              <th scope="row"><a href={href.alert(ws, a.id)}>{a.name}</a>{a.enabled ? null : <small class="muted"> (disabled)</small>}</th>
              <td><span class={`state alert-${a.state}`}>{a.state}</span></td>
              <td><code>{conditionText(a.condition)}</code></td>
              <td><code>{a.cron}</code> {a.timezone}</td>
              <td>{when(a.last_evaluated_at) || '—'}</td>
              <td>{when(a.next_fire_at) || '—'}</td>
            </tr>
          ))}
        </Table>
      )}
    </>
  );
}
