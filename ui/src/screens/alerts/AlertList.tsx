// Alerts or reports of a workspace (`#/w/<ws>/alerts`, `#/w/<ws>/reports`): each with its state,
// condition or content, schedule and last evaluation; "New alert" / "New report" for ws_editor.
import { api, ok } from '../../api/client';
import { Table, when } from '../../components/ui';
import { may } from '../../lib/access';
import { useSession } from '../../lib/session';
import { useLoad } from '../../lib/useLoad';
import { KIND, paths, whatText, type Alert, type Kind } from './alerts';

export function AlertList({ ws, kind = 'alert' }: { ws: string; kind?: Kind }) {
  const session = useSession();
  const k = KIND[kind];
  const list = useLoad(async () => {
    const body = await ok(api.GET(paths(kind).list, { params: { path: { ws } } })) as unknown as Record<string, Alert[]>;
    return body[k.many];
  }, [ws, kind]);
  return (
    <>
      <div class="title-row"><h1>{k.title}</h1>
        {may(session.me, ws, 'ws_editor') ? <a class="button" href={k.create(ws)}>New {k.one}</a> : null}</div>
      {list.data === undefined ? (list.error ? null : <p aria-busy="true">Loading {k.many}…</p>) : list.data.length === 0 ? <p class="empty" id={`no-${k.many}`}>No {k.many} yet.</p> : (
        <Table caption={`${k.title} of the workspace`} headers={[kind === 'alert' ? 'Alert' : 'Report', 'State', kind === 'alert' ? 'Condition' : 'Content', 'Schedule', 'Last evaluated', 'Next']} id={`${k.many}-table`}>
          {list.data.map((a) => (
            <tr key={a.id} data-alert={a.name}>
              <th scope="row"><a href={k.page(ws, a.id)}>{a.name}</a>{a.enabled ? null : <small class="muted"> (disabled)</small>}</th>
              <td><span class={`state alert-${a.state}`}>{a.state}</span></td>
              <td><code>{whatText(a)}</code></td>
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
