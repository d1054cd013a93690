// The workspace's query engines (`#/w/<ws>/engines`): each with its state (polled while one is in
// a transition), desired state, resources, endpoint, error and warnings, and for ws_admin the
// Stop / Start / Delete actions and the create form (engines/EngineForm.tsx). Other roles read
// the list and are offered nothing they may not do.
import { useEffect } from 'preact/hooks';
import { api, ok } from '../../api/client';
import type { Body } from '../../api/types';
import { Button, Table, useBusy, when } from '../../components/ui';
import { may } from '../../lib/access';
import { clearMessages, say } from '../../lib/messages';
import { href } from '../../lib/router';
import { reportTo, useSession } from '../../lib/session';
import { useFocusAfter, useLoad } from '../../lib/useLoad';
import { EngineForm } from './EngineForm';

type Engine = Body<'/api/workspaces/{ws}/engines', 'get'>['engines'][number];
const TRANSITIONS = new Set(['provisioning', 'stopping']);

export function Engines({ ws }: { ws: string }) {
  const session = useSession();
  const admin = may(session.me, ws, 'ws_admin');
  const list = useLoad(() => ok(api.GET('/api/workspaces/{ws}/engines', { params: { path: { ws } } })), [ws]);
  const [busy, run] = useBusy();
  const focus = useFocusAfter();

  const moving = (list.data?.engines ?? []).some((e) => TRANSITIONS.has(e.state));
  useEffect(() => {
    if (!moving) return;
    const t = setInterval(() => { void list.reload(); }, 1500);
    return () => clearInterval(t);
  }, [moving]);

  const act = (e: Engine, action: 'stop' | 'start' | 'delete') => async () => {
    if (action === 'delete' && !confirm(`Delete engine ${e.name}? Its objects and OAuth client are removed.`)) return;
    clearMessages();
    try {
      await run(async () => {
        const path = { params: { path: { ws, name: e.name } } };
        if (action === 'stop') await ok(api.POST('/api/workspaces/{ws}/engines/{name}/stop', path));
        else if (action === 'start') await ok(api.POST('/api/workspaces/{ws}/engines/{name}/start', path));
        else await ok(api.DELETE('/api/workspaces/{ws}/engines/{name}', path));
      });
      say(action === 'delete' ? `Deleting engine ${e.name}.` : action === 'stop' ? `Stopping engine ${e.name}.` : `Starting engine ${e.name}.`);
      await list.reload();
      focus('engines-title');
    } catch (err) { reportTo(session)(err); }
  };

  const data = list.data;
  return (
    <>
      <h1 id="engines-title" tabIndex={-1}>Engines</h1>
      {data ? <p id="provisioner">Provisioner: <strong>{data.provisioner.name}</strong> — {data.provisioner.reason}. The embedded DuckDB engine runs SQL in the <a href={href.sql(ws)}>SQL console</a>{data.provisioner.name === 'none' ? '' : ' when engines.embedded is on'}.</p> : null}
      {data === undefined ? (list.error ? null : <p aria-busy="true">Loading engines…</p>) : data.engines.length === 0 ? <p class="empty" id="no-engines">No engines yet.</p> : (
        <Table caption="Engines of the workspace" headers={['Engine', 'Kind', 'State', 'Resources', 'Endpoint', 'Changed', ...(admin ? ['Actions'] : [])]} id="engines-table">
          {data.engines.map((e) => (
            <tr key={e.id} data-engine={e.name}>
              <th scope="row">{e.name}</th>
              <td>{e.kind} {e.version ?? <code title={e.image}>{e.image.split('@')[0]}</code>}</td>
              <td>
                <span class={`state state-${e.state === 'running' ? 'success' : e.state}`}>{e.state}</span>{e.desired !== 'running' ? <small class="muted"> (wanted: {e.desired})</small> : null}
                {e.error ? <div class="error-text"><small>{e.error}</small></div> : null}
                {e.warnings.map((w) => <div key={w} class="muted"><small>{w}</small></div>)}
              </td>
              <td>{e.resources.cpu} CPU, {e.resources.memory}</td>
              <td>{e.endpoint_url ? <code>{e.endpoint_url}</code> : '—'}</td>
              <td>{when(e.state_changed_at)}</td>
              {admin ? (
                <td class="actions">
                  {e.desired === 'deleted' ? <small class="muted">being deleted</small> : <>
                    {e.state === 'running' || e.state === 'provisioning' || e.state === 'failed' ? <Button class="secondary small" busy={busy} aria-label={`Stop ${e.name}`} onClick={act(e, 'stop')}>Stop</Button> : null}
                    {e.state === 'stopped' || e.state === 'failed' ? <Button class="small" busy={busy} aria-label={`Start ${e.name}`} onClick={act(e, 'start')}>Start</Button> : null}
                    <Button class="secondary outline small" busy={busy} aria-label={`Delete ${e.name}`} onClick={act(e, 'delete')}>Delete</Button>
                  </>}
                </td>
              ) : null}
            </tr>
          ))}
        </Table>
      )}
      {/* With nothing to provision engines with, the form is not offered: it says why before anything is filled (issue 28). */}
      {admin && data && data.provisioner.name === 'none' ? (
        <section aria-labelledby="h-no-add">
          <h2 id="h-no-add">Add an engine</h2>
          <p class="notice" id="engines-off">Adding engines is off in this service: the provisioner is <code>none</code> ({data.provisioner.reason}). An operator sets <code>engines.provisioner</code> (<code>local_container</code>, <code>cluster</code> or <code>auto</code> with a cluster) to provision them; until then SQL runs on the embedded engine.</p>
        </section>
      ) : null}
      {admin && data && data.provisioner.name !== 'none' ? <EngineForm ws={ws} kinds={data.kinds} onCreated={async (name) => { say(`Created engine ${name}; it is provisioning.`); await list.reload(); }} /> : null}
    </>
  );
}
