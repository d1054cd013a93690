// Policies of the workspace's policy service (`#/w/<ws>/policies`, ws_admin; the routes refuse
// every other role, so the screen is offered to no one else): the service's policy and tag
// versions, each policy with its resources and items (allow and deny for an access policy; who
// sees a column masked and how; who sees only the rows a filter keeps), Edit (the editor in
// PolicyForm.tsx, saved with PUT) and Delete after a confirmation, and the engine plugins that
// poll the service with the versions they hold. While policy_service.enabled is off the screen
// says so instead.
import { useState } from 'preact/hooks';
import { api, ok } from '../../api/client';
import type { Body } from '../../api/types';
import { Button, Table, useBusy, when } from '../../components/ui';
import { may } from '../../lib/access';
import { clearMessages, say } from '../../lib/messages';
import { href } from '../../lib/router';
import { reportTo, useSession } from '../../lib/session';
import { useFocusAfter, useLoad } from '../../lib/useLoad';
import { resourceSummary, serviceOff, ServiceOff, type Policy } from './fields';
import { PolicyForm } from './PolicyForm';

type Plugins = Body<'/api/workspaces/{ws}/policy-plugins', 'get'>['plugins'];

const principals = (i: { users?: string[]; groups?: string[]; roles?: string[] }) => [...(i.users ?? []), ...(i.groups ?? []).map((g) => `group ${g}`), ...(i.roles ?? []).map((r) => `role ${r}`)].join(', ');
function Items({ items }: { items: Policy['allow'] }) {
  if (items.length === 0) return <span class="muted">none</span>;
  return <ul class="plain">{items.map((i, n) => <li key={n}>{principals(i)}: <strong>{i.accesses.join(', ')}</strong>{i.delegate_admin ? ' (delegate admin)' : ''}</li>)}</ul>;
}
/** The items of a column mask or row filter policy. */
function MaskAndFilterItems({ p }: { p: Policy }) {
  return (
    <ul class="plain">
      {p.masks.map((m, n) => <li key={`m${n}`}>{principals(m)}: mask <strong>{m.type}</strong>{m.expression ? <> <code>{m.expression}</code></> : null}</li>)}
      {p.row_filters.map((f, n) => <li key={`f${n}`}>{principals(f)}: only rows where <code>{f.filter}</code></li>)}
    </ul>
  );
}
const accessPolicy = (p: Policy) => p.masks.length + p.row_filters.length === 0;

export function Policies({ ws }: { ws: string }) {
  const session = useSession();
  const admin = may(session.me, ws, 'ws_admin');
  const path = { params: { path: { ws } } };
  const list = useLoad(async () => {
    if (!admin) return null;
    try {
      const [p, t, pl, m] = await Promise.all([
        ok(api.GET('/api/workspaces/{ws}/policies', path)), ok(api.GET('/api/workspaces/{ws}/tags', path)),
        ok(api.GET('/api/workspaces/{ws}/policy-plugins', path)), ok(api.GET('/api/workspaces/{ws}/members', path)),
      ]);
      return { service: p.service, policies: p.policies, tags: t.tags, plugins: pl.plugins as Plugins, groups: m.groups.map((g) => g.name), users: m.users.map((u) => u.email) };
    } catch (e) { if (serviceOff(e)) return 'off' as const; throw e; }
  }, [ws]);
  const [editing, setEditing] = useState<Policy | null>(null);
  const [busy, run] = useBusy();
  const focus = useFocusAfter();

  if (!admin) return <><h1>Policies</h1><p>This screen needs the ws_admin role in {ws}.</p></>;

  const remove = async (p: Policy) => {
    if (!confirm(`Delete policy ${p.name}? Engines drop it at their next poll.`)) return;
    clearMessages();
    try {
      const r = await run(() => ok(api.DELETE('/api/workspaces/{ws}/policies/{id}', { params: { path: { ws, id: p.id } } })));
      if (editing?.id === p.id) setEditing(null);
      await list.reload();
      say(`Deleted policy ${p.name}; policy version ${r.policy_version}.`);
      focus('policies-title');
    } catch (e) { reportTo(session)(e); }
  };
  const edit = (p: Policy) => {
    setEditing(p);
    focus('policy-name');
  };

  const d = list.data;
  return (
    <>
      <h1 id="policies-title" tabIndex={-1}>Policies</h1>
      <p class="lead">Who may do what on the workspace's catalogs, schemas, tables and columns, who sees a column masked and who sees only some rows, as engine plugins enforce it. Resources can be tagged on the <a href={href.page(ws, 'tags')}>Tags</a> screen.</p>
      {d === undefined ? (list.error ? null : <p aria-busy="true">Loading policies…</p>) : d === 'off' || d === null ? <ServiceOff /> : <>
        <p id="service-versions">Policy service <code>{d.service.name}</code>: policy version {d.service.policy_version}, tag version {d.service.tag_version}.</p>
        {d.policies.length === 0 ? <p class="empty" id="no-policies">No policies yet.</p> : (
          <Table caption="Access policies, column masks and row filters" headers={['Policy', 'Resources', 'Allow', 'Deny', 'Version', 'Changed', 'Actions']} id="policies-table">
            {d.policies.map((p) => (
              <tr key={p.id} data-policy={p.name}>
                <th scope="row">{p.name}{p.is_enabled ? null : <> <span class="badge">disabled</span></>}{p.description ? <div class="muted"><small>{p.description}</small></div> : null}</th>
                <td>{resourceSummary(p.resources)}</td>
                {accessPolicy(p) ? <><td><Items items={p.allow} /></td><td><Items items={p.deny} /></td></> : <td colSpan={2}><MaskAndFilterItems p={p} /></td>}
                <td class="num">{p.version}</td>
                <td>{when(p.updated_at)}</td>
                <td class="actions">
                  <Button class="secondary small" aria-label={`Edit ${p.name}`} onClick={() => edit(p)}>Edit</Button>
                  <Button class="danger small" busy={busy} aria-label={`Delete ${p.name}`} onClick={() => remove(p)}>Delete</Button>
                </td>
              </tr>
            ))}
          </Table>
        )}
        <PolicyForm key={editing?.id ?? 'new'} ws={ws} editing={editing} tags={d.tags} groups={d.groups} users={d.users}
          onCancel={() => setEditing(null)}
          onSaved={async (name, created) => { setEditing(null); await list.reload(); say(`${created ? 'Created' : 'Saved'} policy ${name}.`); focus('policies-title'); }} />
        <h2>Engine plugins</h2>
        {d.plugins.length === 0 ? <p class="empty" id="no-plugins">No engine plugin has polled this service yet.</p> : (
          <Table caption="Engine plugins polling the policy service" headers={['Plugin', 'Cluster', 'Last poll', 'Policy version held', 'Tag version held', 'Behind']} id="plugins-table">
            {d.plugins.map((p) => (
              <tr key={p.plugin_id}>
                <th scope="row"><code>{p.plugin_id}</code></th><td>{p.cluster_name}</td><td>{when(p.last_poll_at)}</td>
                <td class="num">{p.policy_version_held ?? '—'}</td><td class="num">{p.tag_version_held ?? '—'}</td>
                <td>{p.lagging ? <span class="error-text">{p.policies_behind ?? 0} policy, {p.tags_behind ?? 0} tag versions behind</span> : 'up to date'}</td>
              </tr>
            ))}
          </Table>
        )}
      </>}
    </>
  );
}
