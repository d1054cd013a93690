// Groups (control plane, platform_admin): every group with its source, member count and whether it
// has platform_admin, a Grant/Revoke per row (by id, so a name that is both local and from the
// provider is never ambiguous), and a form granting platform_admin to an identity-provider group
// by name that needs a ticked confirmation.
import { useRef, useState } from 'preact/hooks';
import { api, ok } from '../api/client';
import type { Group } from '../api/types';
import { Badge, Button, FormError, Table, useBusy } from '../components/ui';
import { clearMessages, say, sayAfterNavigation } from '../lib/messages';
import { href } from '../lib/router';
import { isPlatformAdmin, reportTo, useSession } from '../lib/session';
import { useFocusAfter, useLoad } from '../lib/useLoad';

export function Groups() {
  const session = useSession();
  const focusAfter = useFocusAfter();
  const groups = useLoad(async () => (isPlatformAdmin(session.me) ? (await ok(api.GET('/api/groups'))).groups : []), []);
  const [rowBusy, setRowBusy] = useState<string | null>(null);
  const [formErr, setFormErr] = useState('');
  const [busy, run] = useBusy();
  const nameInput = useRef<HTMLInputElement>(null);
  const confirmBox = useRef<HTMLInputElement>(null);

  if (!isPlatformAdmin(session.me)) {
    return <><h1>Groups</h1><p>This screen needs the platform_admin role.</p></>;
  }

  const refresh = async () => {
    const me = await session.refreshMe();
    if (!isPlatformAdmin(me)) { location.hash = href.home(); return false; }
    await groups.reload();
    return true;
  };

  const change = async (g: Group, grant: boolean) => {
    if (!grant && !window.confirm(`Revoke platform_admin from group ${g.name}? Its members will no longer administer the platform.`)) return;
    clearMessages();
    setRowBusy(g.id);
    try {
      const r = await ok(grant
        ? api.PUT('/api/groups/{group}/platform-role', { params: { path: { group: g.id } } })
        : api.DELETE('/api/groups/{group}/platform-role', { params: { path: { group: g.id } } }));
      if (!(await refresh())) { sayAfterNavigation(`Revoked platform_admin from group ${g.name}; you no longer have it.`); return; }
      focusAfter(`${grant ? 'revoke' : 'grant'}-pa-${g.id}`);
      say(grant
        ? (r.changed ? `Granted platform_admin to group ${g.name}.` : `Group ${g.name} already had platform_admin.`)
        : (r.changed ? `Revoked platform_admin from group ${g.name}.` : `Group ${g.name} did not have platform_admin.`));
    } catch (err) {
      reportTo(session)(err);
    } finally {
      setRowBusy(null);
    }
  };

  const grantByName = async (ev: Event) => {
    ev.preventDefault();
    const name = nameInput.current!.value.trim();
    clearMessages();
    setFormErr('');
    if (!name) { setFormErr('Enter a group name.'); nameInput.current!.focus(); return; }
    if (!confirmBox.current!.checked) { setFormErr('Tick the confirmation to grant platform_admin.'); confirmBox.current!.focus(); return; }
    try {
      const r = await run(() => ok(api.PUT('/api/groups/{group}/platform-role', { params: { path: { group: name } } })));
      await refresh();
      nameInput.current!.value = '';
      confirmBox.current!.checked = false;
      focusAfter('grant-group-name');
      say(r.changed ? `Granted platform_admin to group ${name}.` : `Group ${name} already had platform_admin.`);
    } catch (err) {
      reportTo(session, setFormErr)(err);
    }
  };

  const list = groups.data;
  return (
    <>
      <h1>Groups</h1>
      <p class="lead">Groups come from the identity provider’s groups claim or are local to svc. Members of a group with platform_admin administer the whole platform: users, groups and every workspace.</p>
      {list === undefined ? <p aria-busy="true">Loading groups…</p> : list.length === 0 ? <p class="empty">There are no groups yet.</p> : (
        <Table caption="Groups and their platform role" headers={['Group', 'Source', 'Members', 'platform_admin', 'Action']} id="groups-table">
          {list.map((g) => {
            const admin = g.platform_roles.includes('platform_admin');
            return (
              <tr key={g.id} data-group={g.name}>
                <th scope="row">{g.name}</th>
                <td><Badge idp={g.idp_managed} /></td>
                <td class="num">{String(g.members)}</td>
                <td>{admin ? <span class="yes">yes</span> : <span class="no">no</span>}</td>
                <td class="actions">
                  {admin
                    ? <Button class="danger small" id={`revoke-pa-${g.id}`} aria-label={`Revoke platform_admin from ${g.name}`} busy={rowBusy === g.id} onClick={() => change(g, false)}>Revoke</Button>
                    : <Button class="secondary small" id={`grant-pa-${g.id}`} aria-label={`Grant platform_admin to ${g.name}`} busy={rowBusy === g.id} onClick={() => change(g, true)}>Grant</Button>}
                </td>
              </tr>
            );
          })}
        </Table>
      )}
      <section aria-labelledby="h-grant">
        <h2 id="h-grant">Grant platform_admin to an identity-provider group</h2>
        <p class="hint">Grant roles only to group names your organisation controls: a name the provider invents becomes a group here.</p>
        <form id="grant-form" class="card" onSubmit={grantByName} aria-busy={busy ? 'true' : undefined}>
          <FormError text={formErr} />
          <label for="grant-group-name">Group name</label>
          <input ref={nameInput} id="grant-group-name" name="group" required maxLength={255} autocomplete="off" spellcheck={false} aria-describedby="grant-group-hint" />
          <small id="grant-group-hint">Exactly as in the identity provider’s groups claim, without a path prefix.</small>
          <label class="check">
            <input ref={confirmBox} id="grant-confirm" name="confirm" type="checkbox" required />
            I confirm that my organisation controls this group, and that every member of it may administer the whole platform.
          </label>
          <button type="submit" disabled={busy}>Grant platform_admin</button>
        </form>
      </section>
    </>
  );
}
