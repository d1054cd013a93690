// Apps of a workspace (docs/apps.md): name, description and the published version; Open runs the
// published version in the apps origin's iframe; editors also create, edit and delete. A viewer
// gets published apps only from the server, and is offered Open and nothing else.
import { useRef, useState } from 'preact/hooks';
import { api, ok } from '../../api/client';
import { Button, FormError, Table, useBusy, when } from '../../components/ui';
import { may } from '../../lib/access';
import { clearMessages, say, sayAfterNavigation } from '../../lib/messages';
import { href } from '../../lib/router';
import { reportTo, useSession } from '../../lib/session';
import { useLoad } from '../../lib/useLoad';

export const NAME_RULE = 'Lower-case letters, digits and -, at most 63, starting with a letter or digit.';

export function AppList({ ws }: { ws: string }) {
  const session = useSession();
  const canEdit = may(session.me, ws, 'ws_editor');
  const apps = useLoad(async () => (await ok(api.GET('/api/workspaces/{ws}/apps', { params: { path: { ws } } }))).apps, [ws]);
  const [err, setErr] = useState('');
  const [busy, run] = useBusy();
  const name = useRef<HTMLInputElement>(null);
  const description = useRef<HTMLInputElement>(null);

  const create = async (ev: Event) => {
    ev.preventDefault();
    clearMessages();
    setErr('');
    try {
      const a = await run(() => ok(api.POST('/api/workspaces/{ws}/apps', { params: { path: { ws } }, body: {
        name: name.current!.value.trim(), description: description.current!.value.trim(), source: '',
      } })));
      sayAfterNavigation(`Created app ${a.name}. Write its source, then publish it.`);
      location.hash = href.app(ws, a.id);
    } catch (e) { reportTo(session, setErr)(e); }
  };
  const remove = async (id: string, label: string) => {
    if (!window.confirm(`Delete app ${label}? Its draft and every published version are removed.`)) return;
    clearMessages();
    try {
      await ok(api.DELETE('/api/workspaces/{ws}/apps/{id}', { params: { path: { ws, id } } }));
      await apps.reload();
      say(`Deleted app ${label}.`);
    } catch (e) { reportTo(session)(e); }
  };

  return (
    <>
      <h1>Apps</h1>
      <p class="lead">Notebook apps of {ws}. Open runs the published version{canEdit ? '; Edit opens the draft in the author’s notebook' : ''}.</p>
      {apps.data === undefined ? (apps.error ? null : <p aria-busy="true">Loading apps…</p>) : apps.data.length === 0 ? (
        <p class="empty" id="no-apps">{canEdit ? 'No apps yet in this workspace.' : 'No published apps in this workspace yet.'}</p>
      ) : (
        <Table caption={`Apps of ${ws}`} headers={['App', 'Description', 'Published', 'Actions']} id="apps-table">
          {apps.data.map((a) => (
            <tr key={a.id} data-app={a.name}>
              <th scope="row">{canEdit ? <a href={href.app(ws, a.id)}>{a.name}</a> : a.name}</th>
              <td>{a.description || <span class="muted">—</span>}</td>
              <td>{a.published_version === null ? <span class="muted">not published</span> : <>version {a.published_version}<br /><span class="hint">{when(a.published_at)}</span></>}</td>
              <td class="app-actions">
                {a.published_version !== null ? <a class="button small" href={href.appOpen(ws, a.id, 'run')} aria-label={`Open ${a.name}`}>Open</a> : null}
                {canEdit ? <a class="button small secondary" href={href.appOpen(ws, a.id, 'edit')} aria-label={`Edit ${a.name}`}>Edit</a> : null}
                {canEdit ? <Button class="small danger" aria-label={`Delete ${a.name}`} onClick={() => remove(a.id, a.name)}>Delete</Button> : null}
              </td>
            </tr>
          ))}
        </Table>
      )}
      {canEdit ? (
        <section aria-labelledby="h-new-app">
          <h2 id="h-new-app">New app</h2>
          <form onSubmit={create}>
            <div class="row">
              <div class="grow">
                <label for="app-name">Name</label>
                <input id="app-name" ref={name} required maxLength={63} pattern="[a-z0-9][a-z0-9\-]*" spellcheck={false} autocomplete="off" aria-describedby="app-name-rule" />
                <small id="app-name-rule">{NAME_RULE}</small>
              </div>
              <div class="grow">
                <label for="app-description">Description</label>
                <input id="app-description" ref={description} maxLength={1000} autocomplete="off" />
              </div>
              <button type="submit" disabled={busy} aria-busy={busy ? 'true' : undefined}>Create app</button>
            </div>
            <FormError text={err} />
          </form>
        </section>
      ) : null}
    </>
  );
}
