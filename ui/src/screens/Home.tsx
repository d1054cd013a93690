// Home: an overview of the current workspace (its own chunk: screens/home/Overview.tsx), then who
// is signed in, their groups, platform roles and workspaces (with the role in each and a "Manage
// members" link where they may manage them). A platform admin also sees the workspaces they have
// no role in.
import { api, ok } from '../api/client';
import { Badge, RoleTag, Table } from '../components/ui';
import { lazy } from '../lib/lazy';
import { href } from '../lib/router';
import { isPlatformAdmin, useSession } from '../lib/session';
import { useLoad } from '../lib/useLoad';
import { currentWorkspace } from '../lib/workspace';

const Overview = lazy<{ ws: string }>(() => import('./home/Overview').then((m) => m.Overview), 'Loading the overview…');

export function Home() {
  const { me } = useSession();
  const admin = isPlatformAdmin(me);
  const others = useLoad(async () => {
    if (!admin) return [];
    const all = await ok(api.GET('/api/workspaces'));
    const mine = new Set(me.workspaces.map((w) => w.slug));
    return all.workspaces.filter((w) => !mine.has(w.slug));
  }, [me]);
  const name = me.user.name || me.user.email;
  const canManage = (role: string) => role === 'ws_admin' || admin;

  const ws = currentWorkspace({ name: 'home' }, me);
  return (
    <>
      <h1>Overview</h1>
      <p class="lead">Signed in as <span class="name" id="signed-in-as">{name}</span>{me.user.name ? <> ({me.user.email})</> : null}</p>
      {ws ? <Overview key={ws} ws={ws} /> : null}
      <h2 class="section-title">Your access</h2>
      <div class="grid">
        <article aria-labelledby="h-groups">
          <h3 id="h-groups">Your groups</h3>
          {me.groups.length === 0
            ? <p class="empty">You are in no groups.</p>
            : <ul class="plain" id="my-groups">{me.groups.map((g) => <li key={g.name}><span class="group">{g.name}</span> <Badge idp={g.idp_managed} /></li>)}</ul>}
        </article>
        <article aria-labelledby="h-platform">
          <h3 id="h-platform">Platform roles</h3>
          {me.platform_roles.length === 0
            ? <p class="empty" id="platform-roles">None.</p>
            : <ul class="plain" id="platform-roles">{me.platform_roles.map((r) => <li key={r}><RoleTag role={r} /></li>)}</ul>}
        </article>
      </div>
      <section aria-labelledby="h-workspaces">
        <h3 id="h-workspaces">Workspaces</h3>
        {me.workspaces.length === 0
          ? <p class="empty" id="no-workspaces">You have no workspaces yet. Access comes from roles granted to your groups: ask a workspace administrator to add one of them.</p>
          : (
            <Table caption="Your workspaces" headers={['Workspace', 'Slug', 'Your role', 'Members']} id="workspaces">
              {me.workspaces.map((w) => (
                <tr key={w.slug}>
                  <th scope="row">{w.name}</th>
                  <td><code>{w.slug}</code></td>
                  <td><RoleTag role={w.role} /></td>
                  <td>{canManage(w.role) ? <a href={href.members(w.slug)} aria-label={`Manage members of ${w.name}`}>Manage members</a> : <span class="muted">—</span>}</td>
                </tr>
              ))}
            </Table>
          )}
      </section>
      {others.data && others.data.length > 0 ? (
        <section aria-labelledby="h-other-ws">
          <h3 id="h-other-ws">Other workspaces</h3>
          <p class="hint">You have no role here, but as platform_admin you can manage their members.</p>
          <Table caption="Other workspaces" headers={['Workspace', 'Slug', 'Members']}>
            {others.data.map((w) => (
              <tr key={w.slug}>
                <th scope="row">{w.name}</th>
                <td><code>{w.slug}</code></td>
                <td><a href={href.members(w.slug)} aria-label={`Manage members of ${w.name}`}>Manage members</a></td>
              </tr>
            ))}
          </Table>
        </section>
      ) : null}
    </>
  );
}
