// The triggers of a workspace's flows: schedules (cron and time zone), flow triggers (the
// condition) and webhooks, each with when it last fired (a link to the execution it started)
// and, for a schedule, when it fires next (computed by the server from the cron with croner).
// Refreshed every 5 s, so a schedule firing shows without a reload.
import { useEffect } from 'preact/hooks';
import { api, ok } from '../../api/client';
import { Table } from '../../components/ui';
import { href } from '../../lib/router';
import { useLoad } from '../../lib/useLoad';

/** A time to the second (schedules may fire every few seconds), in a <time> element. */
export function At({ iso }: { iso: string | null }) {
  if (!iso) return <span class="muted">—</span>;
  const d = new Date(iso);
  return <time dateTime={iso}>{Number.isNaN(d.getTime()) ? iso : d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' })}</time>;
}

export function Triggers({ ws }: { ws: string }) {
  const list = useLoad(() => ok(api.GET('/workflows/v1/{ws}/triggers', { params: { path: { ws } } })), [ws]);
  useEffect(() => {
    const t = setInterval(() => { void list.reload(); }, 5000);
    return () => clearInterval(t);
  }, [ws]);
  const d = list.data;
  return (
    <>
      <h1>Triggers</h1>
      {d && !d.scheduler_enabled ? (
        <p class="muted" id="scheduler-off">The scheduler is off in this service (<code>workflow.scheduler_enabled</code>): schedules and flow triggers do not fire; next fire times say when they would.</p>
      ) : null}
      {d === undefined ? (list.error ? null : <p aria-busy="true">Loading triggers…</p>) : d.triggers.length === 0 ? (
        <p class="empty" id="no-triggers">No flow in this workspace declares a trigger. Add one under <code>triggers:</code> in a flow.</p>
      ) : (
        <Table caption="Triggers of the workspace's flows" headers={['Trigger', 'Flow', 'Type', 'When', 'Last fired', 'Next fire']} id="triggers-table">
          {d.triggers.map((t) => (
            <tr key={`${t.namespace}/${t.flow_id}/${t.id}`} data-trigger={`${t.namespace}.${t.flow_id}.${t.id}`}>
              <th scope="row">{t.id}{t.disabled ? <small class="muted"> (disabled)</small> : null}</th>
              <td><a href={href.flow(ws, t.namespace, t.flow_id)}>{t.namespace}.{t.flow_id}</a></td>
              <td>{t.type}</td>
              <td>
                {t.type === 'schedule' ? <><code>{t.schedule}</code> <small class="muted">{t.timezone}</small></> : t.type === 'flow' ? t.condition : 'a call to its webhook URL'}
                {t.problem ? <small class="error-text"><br />{t.problem}</small> : null}
              </td>
              <td class="last-fired">{t.last_execution_id ? <a href={href.execution(ws, t.last_execution_id)}><At iso={t.last_fired_at} /></a> : <At iso={t.last_fired_at} />}</td>
              <td class="next-fire">{t.type === 'schedule' ? <At iso={t.next_fire_at} /> : <span class="muted">on event</span>}</td>
            </tr>
          ))}
        </Table>
      )}
      {d?.truncated ? <p class="muted">Only the first 1000 triggers are shown.</p> : null}
    </>
  );
}
