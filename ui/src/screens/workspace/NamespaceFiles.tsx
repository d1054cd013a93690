// Namespace files (the files flows read with `read()` and `inputFiles`): pick a namespace (typed,
// or chosen from the namespaces of the workspace's flows; kept in the URL), browse its files as
// folders, open one in the code editor (highlighted by its extension: YAML and JSON, SQL, or
// plain text), upload a file from the computer. Viewers read; ws_editor uploads, saves and
// deletes (the server checks again).
import { useState } from 'preact/hooks';
import { api, ok, ApiError } from '../../api/client';
import { Button, FormError, Table, useBusy, when } from '../../components/ui';
import { may } from '../../lib/access';
import { clearMessages, say, sayAfterNavigation } from '../../lib/messages';
import { href, replaceQuery } from '../../lib/router';
import { reportTo, useSession } from '../../lib/session';
import { useLoad } from '../../lib/useLoad';
import { Editor } from '../../editor/lazy';

/** The editor's language for a file name. */
export const languageOf = (path: string): 'yaml' | 'sql' | 'text' => (/\.(ya?ml|json)$/i.test(path) ? 'yaml' : /\.sql$/i.test(path) ? 'sql' : 'text');

/** Files larger than this are offered as a download, not opened in the text editor. */
const MAX_EDIT_BYTES = 512 * 1024;
const NS_RE = /^[a-z0-9][a-z0-9_.-]{0,99}$/;

const base = (ws: string, ns: string) => `/workflows/v1/${encodeURIComponent(ws)}/namespaces/${encodeURIComponent(ns)}/files/content`;

export function NamespaceFiles({ ws, query }: { ws: string; query: URLSearchParams }) {
  const session = useSession();
  const canEdit = may(session.me, ws, 'ws_editor');
  const ns = query.get('namespace') ?? '';
  const dir = query.get('dir') ?? '';
  const open = query.get('path') ?? '';
  const [nsForm, setNsForm] = useState(ns);
  // The namespaces of the workspace's flows (and their parents), offered in the picker.
  const known = useLoad(async () => {
    const flows = (await ok(api.GET('/workflows/v1/{ws}/flows', { params: { path: { ws }, query: { limit: 500, offset: 0 } } }))).flows;
    const all = new Set<string>();
    for (const f of flows) { const parts = f.namespace.split('.'); for (let i = 1; i <= parts.length; i++) all.add(parts.slice(0, i).join('.')); }
    return [...all].sort();
  }, [ws]);
  /** Shows another file or folder; an outcome to announce is shown after the navigation (which clears messages). */
  const go = (q: { dir?: string; path?: string }, outcome: string) => {
    const before = location.hash;
    if (outcome) sayAfterNavigation(outcome);
    replaceQuery(href.page(ws, 'files'), { namespace: ns, dir: dir || undefined, path: undefined, ...q });
    if (location.hash === before && outcome) { sayAfterNavigation(''); say(outcome); }
  };

  const list = useLoad(async () => (NS_RE.test(ns) ? ok(api.GET('/workflows/v1/{ws}/namespaces/{namespace}/files', { params: { path: { ws, namespace: ns } } })) : null), [ws, ns]);
  const files = list.data?.files ?? [];
  // One folder level at a time: the files directly in `dir` and its sub-folders.
  const prefix = dir ? `${dir}/` : '';
  const here = files.filter((f) => f.path.startsWith(prefix));
  const folders = [...new Set(here.map((f) => f.path.slice(prefix.length)).filter((p) => p.includes('/')).map((p) => p.split('/')[0]))].sort();
  const direct = here.filter((f) => !f.path.slice(prefix.length).includes('/'));

  return (
    <>
      <h1>Namespace files</h1>
      <form class="row filters" role="search" aria-label="Choose a namespace" onSubmit={(ev) => { ev.preventDefault(); replaceQuery(href.page(ws, 'files'), { namespace: nsForm.trim() || undefined }); }}>
        <div class="grow"><label for="nf-ns">Namespace</label><input id="nf-ns" list="nf-ns-options" value={nsForm} maxLength={100} spellcheck={false} placeholder="team.sales" onInput={(e) => setNsForm(e.currentTarget.value)} />
          <datalist id="nf-ns-options">{(known.data ?? []).map((n) => <option key={n} value={n} />)}</datalist></div>
        {(known.data ?? []).length ? (
          <div><label for="nf-ns-pick">Namespaces of flows</label>
            <select id="nf-ns-pick" value={known.data!.includes(ns) ? ns : ''} onChange={(e) => { const v = e.currentTarget.value; setNsForm(v); if (v) replaceQuery(href.page(ws, 'files'), { namespace: v }); }}>
              <option value="">choose…</option>
              {known.data!.map((n) => <option key={n} value={n}>{n}</option>)}
            </select></div>
        ) : null}
        <button type="submit">Show files</button>
      </form>
      {!ns ? <p class="empty">Choose a namespace to see its files.</p> : !NS_RE.test(ns) ? <p class="error-text">“{ns}” is not a namespace: lower-case letters, digits, “.”, “_” and “-”.</p> : list.data === undefined ? (list.error ? null : <p aria-busy="true">Loading files…</p>) : (
        <>
          <nav aria-label="Folder" class="crumbs">
            <ul>
              <li><a href={href.page(ws, 'files', { namespace: ns })}>{ns}</a></li>
              {dir.split('/').filter(Boolean).map((seg, i, all) => <li key={i}><a href={href.page(ws, 'files', { namespace: ns, dir: all.slice(0, i + 1).join('/') })}>{seg}</a></li>)}
            </ul>
          </nav>
          {folders.length + direct.length === 0 ? <p class="empty" id="no-files">No files {dir ? 'in this folder' : 'in this namespace'} yet.</p> : (
            <Table caption={`Files of ${ns}${dir ? `/${dir}` : ''}`} headers={['Name', 'Size', 'Changed']} id="files-table">
              {folders.map((f) => (
                <tr key={`d/${f}`} data-folder={f}>
                  <th scope="row"><a href={href.page(ws, 'files', { namespace: ns, dir: prefix + f })}>{f}/</a></th><td /><td />
                </tr>
              ))}
              {direct.map((f) => (
                <tr key={f.path} data-file={f.path}>
                  <th scope="row"><a href={href.page(ws, 'files', { namespace: ns, dir: dir || undefined, path: f.path })} aria-current={open === f.path ? 'true' : undefined}>{f.path.slice(prefix.length)}</a></th>
                  <td class="num">{f.size} bytes</td>
                  <td>{when(f.updated_at)}</td>
                </tr>
              ))}
            </Table>
          )}
          {list.data?.truncated ? <p class="muted">Only the first files are listed (workflow.storage.max_namespace_files).</p> : null}
          {open ? <FileEditor key={open} ws={ws} ns={ns} path={open} size={files.find((f) => f.path === open)?.size} canEdit={canEdit}
            onChanged={async (outcome, gone) => { await list.reload(); if (gone) go({ path: undefined }, outcome); else say(outcome); }} /> : null}
          {canEdit ? <Upload ws={ws} ns={ns} dir={dir} onDone={async (p, outcome) => { await list.reload(); go({ path: p }, outcome); }} /> : null}
        </>
      )}
    </>
  );
}

function FileEditor({ ws, ns, path, size, canEdit, onChanged }: { ws: string; ns: string; path: string; size?: number; canEdit: boolean; onChanged(outcome: string, gone: boolean): Promise<void> }) {
  const session = useSession();
  const [text, setText] = useState<string | null>(null);
  const [saved, setSaved] = useState(0);
  const [err, setErr] = useState('');
  const [busy, run] = useBusy();
  const tooBig = size !== undefined && size > MAX_EDIT_BYTES;
  const content = useLoad(async () => {
    if (tooBig) return null;
    const r = await api.GET('/workflows/v1/{ws}/namespaces/{namespace}/files/content', { params: { path: { ws, namespace: ns }, query: { path } }, parseAs: 'text' });
    if (!r.response.ok) {
      let b: { error?: string; message?: string } = {};
      try { b = JSON.parse(String(r.error)) as typeof b; } catch { /* not JSON: the status says it */ }
      throw new ApiError(r.response.status, b.error ?? 'error', b.message ?? `request failed with status ${r.response.status}`);
    }
    return r.data as unknown as string;
  }, [ws, ns, path, tooBig]);
  const value = text ?? content.data ?? '';
  const save = async (ev: Event) => {
    ev.preventDefault();
    clearMessages(); setErr('');
    try {
      await run(() => ok(api.PUT('/workflows/v1/{ws}/namespaces/{namespace}/files/content', {
        params: { path: { ws, namespace: ns }, query: { path } }, body: new Blob([value]) as never, bodySerializer: (b: unknown) => b as Blob, headers: { 'content-type': 'application/octet-stream' },
      })));
      setText(null);
      await content.reload();
      setSaved((n) => n + 1);
      await onChanged(`Saved ${path}.`, false);
    } catch (e) { reportTo(session, setErr)(e); }
  };
  const remove = async () => {
    if (!window.confirm(`Delete ${path} from ${ns}? Flows that read it will fail.`)) return;
    clearMessages(); setErr('');
    try {
      await run(() => ok(api.DELETE('/workflows/v1/{ws}/namespaces/{namespace}/files/content', { params: { path: { ws, namespace: ns }, query: { path } } })));
      await onChanged(`Deleted ${path}.`, true);
    } catch (e) { reportTo(session, setErr)(e); }
  };
  return (
    <section aria-labelledby="h-file" class="file-editor">
      <h2 id="h-file"><code>{path}</code></h2>
      <p><a href={`${base(ws, ns)}?path=${encodeURIComponent(path)}`} download={path.split('/').pop()}>Download</a></p>
      {tooBig ? <p class="muted">This file is over {MAX_EDIT_BYTES / 1024} KiB: download it to read it.</p> : content.data === undefined ? (content.error ? null : <p aria-busy="true">Loading…</p>) : (
        <form onSubmit={save}>
          <label for="file-text">Content of {path}</label>
          <Editor key={`${path}:${saved}`} id="file-text" label={`Content of ${path}`} value={content.data ?? ''} language={languageOf(path)} readOnly={!canEdit} onChange={setText} />
          <FormError text={err} />
          {canEdit ? <div class="actions">
            <button type="submit" disabled={busy || text === null} aria-busy={busy ? 'true' : undefined}>Save file</button>
            <Button class="secondary danger" onClick={remove} busy={busy}>Delete file</Button>
          </div> : null}
        </form>
      )}
    </section>
  );
}

function Upload({ ws, ns, dir, onDone }: { ws: string; ns: string; dir: string; onDone(path: string, outcome: string): Promise<void> }) {
  const session = useSession();
  const [err, setErr] = useState('');
  const [busy, run] = useBusy();
  const [name, setName] = useState('');
  const upload = async (ev: Event) => {
    ev.preventDefault();
    clearMessages(); setErr('');
    const form = ev.currentTarget as HTMLFormElement;
    const input = form.querySelector<HTMLInputElement>('#upload-file')!;
    const file = input.files?.[0];
    if (!file) { setErr('Choose a file to upload.'); return; }
    const path = (name.trim() || (dir ? `${dir}/${file.name}` : file.name)).replace(/^\/+/, '');
    try {
      const r = await run(() => ok(api.PUT('/workflows/v1/{ws}/namespaces/{namespace}/files/content', {
        params: { path: { ws, namespace: ns }, query: { path } }, body: file as never, bodySerializer: (b: unknown) => b as Blob, headers: { 'content-type': 'application/octet-stream' },
      })));
      form.reset(); setName('');
      await onDone(r.path, `Uploaded ${r.path} (${r.size} bytes).`);
    } catch (e) { reportTo(session, setErr)(e); }
  };
  return (
    <section aria-labelledby="h-upload">
      <h2 id="h-upload">Upload a file</h2>
      <form onSubmit={upload}>
        <div class="grid">
          <div><label for="upload-file">File</label><input id="upload-file" type="file" /></div>
          <div><label for="upload-path">Path in {ns} (optional)</label><input id="upload-path" value={name} maxLength={512} spellcheck={false} placeholder={dir ? `${dir}/name.txt` : 'folder/name.txt'} onInput={(e) => setName(e.currentTarget.value)} /></div>
        </div>
        <FormError text={err} />
        <button type="submit" disabled={busy} aria-busy={busy ? 'true' : undefined}>Upload</button>
      </form>
    </section>
  );
}
