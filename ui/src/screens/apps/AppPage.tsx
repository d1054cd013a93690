// One app: its published version and, for editors, the draft source in the console's CodeMirror
// editor (Save draft), Publish (the draft becomes the next version, the one viewers run) and
// Delete. Open and Edit go to the app's iframe (AppFrame) through the ticket flow.
import { useEffect, useState } from 'preact/hooks';
import { api, ok } from '../../api/client';
import { Button, FormError, useBusy, when } from '../../components/ui';
import { Editor } from '../../editor/lazy';
import { may } from '../../lib/access';
import { clearMessages, say, sayAfterNavigation } from '../../lib/messages';
import { href } from '../../lib/router';
import { reportTo, useSession } from '../../lib/session';
import { useLoad } from '../../lib/useLoad';

export function AppPage({ ws, id }: { ws: string; id: string }) {
  const session = useSession();
  const canEdit = may(session.me, ws, 'ws_editor');
  const path = { ws, id };
  const app = useLoad(() => ok(api.GET('/api/workspaces/{ws}/apps/{id}', { params: { path } })), [ws, id]);
  const draft = useLoad(async () => (canEdit ? (await ok(api.GET('/api/workspaces/{ws}/apps/{id}/draft', { params: { path } }))).source : null), [ws, id]);
  const [text, setText] = useState<string | null>(null);
  const [err, setErr] = useState('');
  const [saving, runSave] = useBusy();
  const [publishing, runPublish] = useBusy();

  useEffect(() => { if (typeof draft.data === 'string') setText(draft.data); }, [draft.data]);
  useEffect(() => { if (app.data) document.title = `${app.data.name} · Apps · svc`; }, [app.data]);

  const dirty = typeof draft.data === 'string' && text !== null && text !== draft.data;
  const save = async () => {
    if (text === null) return;
    clearMessages();
    setErr('');
    try {
      await runSave(() => ok(api.PUT('/api/workspaces/{ws}/apps/{id}/draft', { params: { path }, body: { source: text } })));
      await Promise.all([draft.reload(), app.reload()]);
      say('Saved the draft.');
    } catch (e) { reportTo(session, setErr)(e); }
  };
  const publish = async () => {
    clearMessages();
    setErr('');
    try {
      const a = await runPublish(() => ok(api.POST('/api/workspaces/{ws}/apps/{id}/publish', { params: { path } })));
      await app.reload();
      say(`Published version ${a.published_version}. Viewers now run it.`);
    } catch (e) { reportTo(session, setErr)(e); }
  };
  const remove = async () => {
    const name = app.data?.name ?? id;
    if (!window.confirm(`Delete app ${name}? Its draft and every published version are removed.`)) return;
    clearMessages();
    try {
      await ok(api.DELETE('/api/workspaces/{ws}/apps/{id}', { params: { path } }));
      sayAfterNavigation(`Deleted app ${name}.`);
      location.hash = href.apps(ws);
    } catch (e) { reportTo(session)(e); }
  };

  const a = app.data;
  return (
    <>
      <nav aria-label="Breadcrumb" class="crumbs"><ul><li><a href={href.apps(ws)}>Apps</a></li><li>{a?.name ?? 'App'}</li></ul></nav>
      <div class="title-row">
        <h1>{a?.name ?? 'App'}</h1>
        {a ? (
          <div class="actions">
            {a.published_version !== null ? <a class="button" href={href.appOpen(ws, id, 'run')}>Open</a> : null}
            {canEdit ? <a class="button secondary" href={href.appOpen(ws, id, 'edit')}>Edit in notebook</a> : null}
            {canEdit ? <Button class="danger" onClick={remove}>Delete</Button> : null}
          </div>
        ) : null}
      </div>
      {a === undefined ? (app.error ? null : <p aria-busy="true">Loading the app…</p>) : (
        <>
          {a.description ? <p class="lead">{a.description}</p> : null}
          <p id="app-published">{a.published_version === null ? 'Not published yet: viewers do not see it.' : `Published version ${a.published_version}, ${when(a.published_at)}.`}</p>
          {canEdit ? (
            <section aria-labelledby="h-draft">
              <h2 id="h-draft">Draft</h2>
              {a.draft_updated_at ? <p class="hint">Saved {when(a.draft_updated_at)}{dirty ? ' · unsaved changes' : ''}</p> : null}
              {text === null ? (draft.error ? null : <p aria-busy="true">Loading the draft…</p>) : (
                <Editor id="app-source" label="App source" language="text" value={text} onChange={setText} />
              )}
              <FormError text={err} />
              <div class="row">
                <Button id="save-draft" busy={saving} disabled={text === null || !dirty} onClick={save}>Save draft</Button>
                <Button id="publish-app" class="secondary" busy={publishing} disabled={text === null || dirty} onClick={publish}
                  title={dirty ? 'Save the draft first' : undefined}>Publish</Button>
              </div>
              {dirty ? <p class="hint">Save the draft before publishing: Publish copies the saved draft.</p> : null}
            </section>
          ) : null}
        </>
      )}
    </>
  );
}
