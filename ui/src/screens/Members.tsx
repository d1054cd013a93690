// Members of a workspace (ws_admin of it, or platform_admin): the groups with a role, each with a
// role select, Save and Revoke; an "Add group" form (name as in the groups claim + role); the
// read-only list of people with a direct role (the administrator made by `svc init`).
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiError, errorText, ok } from '../api/client';
import type { Members as MembersBody, Workspace, WorkspaceRole } from '../api/types';
import { Badge, Button, FormError, RoleTag, Table, useBusy, when } from '../components/ui';
import { clearMessages, say } from '../lib/messages';
import { href } from '../lib/router';
import { reportTo, useSession } from '../lib/session';
import { useFocusAfter } from '../lib/useLoad';

const ROLES: WorkspaceRole[] = ['ws_admin', 'ws_editor', 'ws_viewer'];
const ROLE_HELP: Record<WorkspaceRole, string> = {
  ws_admin: 'manages the workspace and its members',
  ws_editor: 'creates and changes the workspace’s content',
  ws_viewer: 'reads the workspace’s content',
};

function RoleSelect({ id, value, label, onChange }: { id: string; value: WorkspaceRole; label?: string; onChange(v: WorkspaceRole): void }) {
  return (
    <select id={id} aria-label={label} value={value} onChange={(e) => onChange((e.currentTarget as HTMLSelectElement).value as WorkspaceRole)}>
      {ROLES.map((r) => <option key={r} value={r}>{r}</option>)}
    </select>
  );
}

export function Members({ ws: slug }: { ws: string }) {
  const session = useSession();
  const focusAfter = useFocusAfter();
  const [data, setData] = useState<{ ws: Workspace; members: MembersBody } | null>(null);
  const [denied, setDenied] = useState(false);
  const [draft, setDraft] = useState<Record<string, WorkspaceRole>>({});
  const [rowBusy, setRowBusy] = useState<string | null>(null);
  const [addRole, setAddRole] = useState<WorkspaceRole>('ws_viewer');
  const [formErr, setFormErr] = useState('');
  const [busy, run] = useBusy();
  const nameInput = useRef<HTMLInputElement>(null);
  const report = reportTo(session);

  const load = async () => {
    const p = { params: { path: { ws: slug } } };
    const [ws, members] = await Promise.all([ok(api.GET('/api/workspaces/{ws}', p)), ok(api.GET('/api/workspaces/{ws}/members', p))]);
    setData({ ws, members });
    setDraft({});
  };

  useEffect(() => {
    document.title = `Members of ${slug} · svc`;
    setData(null);
    setDenied(false);
    load().catch((err) => {
      if (err instanceof ApiError && (err.status === 403 || err.status === 404)) {
        setDenied(true);
        report(new Error(err.status === 403 ? `You cannot manage the members of workspace ${slug}: ${errorText(err)}` : err.message));
        return;
      }
      report(err);
    });
  }, [slug]);

  const setRole = async (ref: string, name: string, role: WorkspaceRole, focusId: string) => {
    const r = await ok(api.PUT('/api/workspaces/{ws}/members/groups/{group}', { params: { path: { ws: slug, group: ref } }, body: { role } }));
    await session.refreshMe();
    await load();
    focusAfter(focusId);
    say(r.change === 'created' ? `Added group ${name} to ${slug} as ${role}.`
      : r.change === 'updated' ? `Group ${name} now has ${role} in ${slug}.`
        : `Group ${name} already had ${role} in ${slug}.`);
  };

  const save = async (id: string, name: string, role: WorkspaceRole) => {
    clearMessages();
    setRowBusy(id);
    try { await setRole(id, name, role, `save-${id}`); } catch (err) { report(err); } finally { setRowBusy(null); }
  };

  const revoke = async (id: string, name: string) => {
    if (!window.confirm(`Revoke the role of group ${name} in ${slug}? Its members lose the access it gave them.`)) return;
    clearMessages();
    setRowBusy(id);
    try {
      const r = await ok(api.DELETE('/api/workspaces/{ws}/members/groups/{group}', { params: { path: { ws: slug, group: id } } }));
      await session.refreshMe();
      await load();
      focusAfter('add-group-name');
      say(r.changed ? `Revoked the role of group ${name} in ${slug}.` : `Group ${name} had no role in ${slug}.`);
    } catch (err) { report(err); } finally { setRowBusy(null); }
  };

  const add = async (ev: Event) => {
    ev.preventDefault();
    const name = nameInput.current!.value.trim();
    clearMessages();
    setFormErr('');
    if (!name) { setFormErr('Enter a group name.'); nameInput.current!.focus(); return; }
    try {
      await run(() => setRole(name, name, addRole, 'add-group-name'));
      nameInput.current!.value = '';
    } catch (err) { reportTo(session, setFormErr)(err); }
  };

  if (denied) return <><h1>Members</h1><p><a href={href.home()}>Back to your workspaces</a></p></>;
  if (!data) return <><h1>Members of <span class="name">{slug}</span></h1><p aria-busy="true">Loading members…</p></>;
  const { ws, members } = data;

  return (
    <>
      <nav aria-label="Breadcrumb" class="crumbs"><ul><li><a href={href.home()}>Home</a></li><li>{ws.name}</li></ul></nav>
      <h1>Members of <span class="name">{ws.name}</span></h1>
      <p class="lead">People get access to workspace <code>{ws.slug}</code> through the roles of their groups.{' '}
        {ROLES.map((r, i) => <span key={r}><strong>{r}</strong> {ROLE_HELP[r]}{i < ROLES.length - 1 ? '; ' : '.'}</span>)}</p>
      <section aria-labelledby="h-members">
        <h2 id="h-members">Groups</h2>
        {members.groups.length === 0 ? <p class="empty">No group has a role in this workspace yet.</p> : (
          <Table caption={`Groups with a role in ${ws.name}`} headers={['Group', 'Source', 'Role', 'Granted by', 'Actions']} id="members-table">
            {members.groups.map((g) => (
              <tr key={g.id} data-group={g.name}>
                <th scope="row">{g.name}</th>
                <td><Badge idp={g.idp_managed} /></td>
                <td><RoleSelect id={`role-${g.id}`} label={`Role of ${g.name}`} value={draft[g.id] ?? g.role} onChange={(v) => setDraft({ ...draft, [g.id]: v })} /></td>
                <td class="muted">{g.granted_by ?? '—'}<br /><small>{when(g.granted_at)}</small></td>
                <td class="actions">
                  <Button class="secondary small" id={`save-${g.id}`} aria-label={`Save role of ${g.name}`} busy={rowBusy === g.id} onClick={() => save(g.id, g.name, draft[g.id] ?? g.role)}>Save</Button>
                  <Button class="danger small" id={`revoke-${g.id}`} aria-label={`Revoke ${g.name}`} busy={rowBusy === g.id} onClick={() => revoke(g.id, g.name)}>Revoke</Button>
                </td>
              </tr>
            ))}
          </Table>
        )}
      </section>
      <section aria-labelledby="h-add">
        <h2 id="h-add">Add a group</h2>
        <form id="add-group-form" class="card" onSubmit={add} aria-busy={busy ? 'true' : undefined}>
          <FormError text={formErr} />
          <div class="row">
            <div class="grow">
              <label for="add-group-name">Group name</label>
              <input ref={nameInput} id="add-group-name" name="group" required maxLength={255} autocomplete="off" spellcheck={false} aria-describedby="add-group-hint" />
            </div>
            <div>
              <label for="add-group-role">Role</label>
              <RoleSelect id="add-group-role" value={addRole} onChange={setAddRole} />
            </div>
            <button type="submit" disabled={busy}>Add group</button>
          </div>
          <small id="add-group-hint">The name exactly as in the identity provider’s groups claim, for example analysts. A name not seen yet becomes an identity-provider group.</small>
        </form>
      </section>
      {members.users.length === 0 ? null : (
        <section aria-labelledby="h-users">
          <h2 id="h-users">People with a direct role</h2>
          <p class="hint">Set by svc init for the break-glass administrator; not changed here.</p>
          <Table caption={`People with a direct role in ${ws.name}`} headers={['Email', 'Role', 'Granted']}>
            {members.users.map((u) => <tr key={u.email}><th scope="row">{u.email}</th><td><RoleTag role={u.role} /></td><td>{when(u.granted_at)}</td></tr>)}
          </Table>
        </section>
      )}
    </>
  );
}
