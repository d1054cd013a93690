// The triggers of a workspace's flows: schedules (cron and time zone), flow triggers (the
// condition) and webhooks, each with when it last fired (a link to the execution it started)
// and, for a schedule, when it fires next (computed by the server from the cron with croner),
// every time shown in the schedule's own time zone, named beside it (the browser's for the
// others). A ws_editor enables and disables a trigger: its `disabled` key is set in the flow's
// source, saved as a new revision (flowSource.ts), so the change is in the flow's history.
// Refreshed every 5 s, so a schedule firing shows without a reload.
import { useEffect } from 'preact/hooks';
import { api, ok } from '../../api/client';
import { Button, Table, useBusy } from '../../components/ui';
import { may } from '../../lib/access';
import { clearMessages, say } from '../../lib/messages';
import { href } from '../../lib/router';
import { reportTo, useSession } from '../../lib/session';
import { Time } from '../../lib/time';
import { useLoad } from '../../lib/useLoad';
import { setTriggerDisabled } from '../flows/flowSource';

const LOCAL_ZONE = Intl.DateTimeFormat().resolvedOptions().timeZone;

/** A time to the second (schedules may fire every few seconds), with its time zone named. */
export function At({ iso, zone }: { iso: string | null; zone?: string | null }) {
  return <Time iso={iso} zone={zone ?? LOCAL_ZONE} />;
}

export function Triggers({ ws }: { ws: string }) {
  const session = useSession();
  const editor = may(session.me, ws, 'ws_editor');
  const [busy, run] = useBusy();
  const list = useLoad(() => ok(api.GET('/workflows/v1/{ws}/triggers', { params: { path: { ws } } })), [ws]);
  const toggle = (t: { namespace: string; flow_id: string; id: string; disabled: boolean }) => void run(async () => {
    clearMessages();
    try {
      const path = { ws, namespace: t.namespace, id: t.flow_id };
      const flow = await ok(api.GET('/workflows/v1/{ws}/flows/{namespace}/{id}', { params: { path } }));
      const source = await setTriggerDisabled(flow.source, t.id, !t.disabled);
      const saved = await ok(api.PUT('/workflows/v1/{ws}/flows/{namespace}/{id}', { params: { path }, body: { source } as never }));
      await list.reload();
      say(`${t.disabled ? 'Enabled' : 'Disabled'} trigger ${t.id} of ${t.namespace}.${t.flow_id} (revision ${saved.revision}).`);
    } catch (err) { reportTo(session)(err); }
  });
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
        <Table caption="Triggers of the workspace's flows" headers={['Trigger', 'Flow', 'Type', 'When', 'Last fired', 'Next fire', ...(editor ? ['Actions'] : [])]} id="triggers-table">
          {d.triggers.map((t) => (
            <tr key={`${t.namespace}/${t.flow_id}/${t.id}`} data-trigger={`${t.namespace}.${t.flow_id}.${t.id}`}>
              <th scope="row">{t.id}{t.disabled ? <small class="muted"> (disabled)</small> : null}</th>
              <td><a href={href.flow(ws, t.namespace, t.flow_id)}>{t.namespace}.{t.flow_id}</a></td>
              <td>{t.type}</td>
              <td>
                {t.type === 'schedule' ? <><code>{t.schedule}</code> <small class="muted">{t.timezone}</small></> : t.type === 'flow' ? t.condition : 'a call to its webhook URL'}
                {t.problem ? <small class="error-text"><br />{t.problem}</small> : null}
              </td>
              <td class="last-fired">{t.last_execution_id ? <a href={href.execution(ws, t.last_execution_id)}><At iso={t.last_fired_at} zone={t.timezone} /></a> : <At iso={t.last_fired_at} zone={t.timezone} />}</td>
              <td class="next-fire">{t.type === 'schedule' ? <At iso={t.next_fire_at} zone={t.timezone} /> : <span class="muted">on event</span>}</td>
              {editor ? <td class="actions"><Button class="secondary small" busy={busy} aria-label={`${t.disabled ? 'Enable' : 'Disable'} ${t.id} of ${t.namespace}.${t.flow_id}`} onClick={() => toggle(t)}>{t.disabled ? 'Enable' : 'Disable'}</Button></td> : null}
            </tr>
          ))}
        </Table>
      )}
      {d?.truncated ? <p class="muted">Only the first 1000 triggers are shown.</p> : null}
    </>
  );
}
