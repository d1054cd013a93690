// The Data API screen (`#/w/<ws>/data-api`, docs/data-api.md): the workspace's endpoints (latest
// version, engine, parameters, result columns, URL with a Copy button); one opened shows a ready
// curl call and a "try it" form typed from its parameters (EndpointTry.tsx); a publish form for
// ws_editor with the SQL in the SQL console's editor (a new version when the definition changed;
// Edit fills it with an endpoint's definition), Delete, and the access log of calls naming the
// client (endpoint and version, status, rows, bytes, duration), newest first; for ws_admin, the
// form that makes a client calling the endpoints (DataApiClient.tsx).
import { useState } from 'preact/hooks';
import { api, ok } from '../../api/client';
import type { Body } from '../../api/types';
import { Button, FormError, Table, useBusy, when } from '../../components/ui';
import { may } from '../../lib/access';
import { clearMessages, say } from '../../lib/messages';
import { reportTo, useSession } from '../../lib/session';
import { useLoad } from '../../lib/useLoad';
import { DataApiClient } from './DataApiClient';
import { EndpointTry } from './EndpointTry';
import { SqlEditor } from '../../editor/lazy';
import { CopyButton } from '../../components/Copy';
import '../../styles/screens.css';

type Endpoint = Body<'/api/workspaces/{ws}/data-api/endpoints', 'get'>['endpoints'][number];
const EMPTY = { name: '', engine: 'embedded', sql: '', params: '[]', description: '' };

export function DataApi({ ws }: { ws: string }) {
  const session = useSession();
  const editor = may(session.me, ws, 'ws_editor');
  const list = useLoad(async () => (await ok(api.GET('/api/workspaces/{ws}/data-api/endpoints', { params: { path: { ws } } }))).endpoints, [ws]);
  const admin = may(session.me, ws, 'ws_admin');
  const log = useLoad(async () => (!admin ? [] : (await ok(api.GET('/api/workspaces/{ws}/data-api/access-log', { params: { path: { ws }, query: { limit: 50 } } }))).entries), [ws]);
  const [f, setF] = useState(EMPTY);
  const [open, setOpen] = useState<string | null>(null);
  // The editor owns its text: a new value (Edit, or the form emptied) is a new editor.
  const [sqlKey, setSqlKey] = useState(0);
  const [err, setErr] = useState('');
  const [busy, run] = useBusy();
  const set = (k: keyof typeof f) => (e: Event) => setF({ ...f, [k]: (e.currentTarget as HTMLInputElement).value });

  const publish = async (ev: Event) => {
    ev.preventDefault();
    clearMessages(); setErr('');
    let params: unknown;
    try { params = JSON.parse(f.params || '[]'); } catch { setErr('Parameters must be a JSON array, for example [{"name": "region", "type": "string"}].'); return; }
    try {
      const e = await run(() => ok(api.PUT('/api/workspaces/{ws}/data-api/endpoints/{name}', {
        params: { path: { ws, name: f.name.trim() } },
        body: { engine: f.engine.trim(), sql: f.sql, params: params as Endpoint['params'], description: f.description },
      })));
      setF(EMPTY); setSqlKey((k) => k + 1);
      await list.reload();
      say(`Published ${e.name} version ${e.version}.`);
    } catch (e) { reportTo(session, setErr)(e); }
  };
  const edit = (e: Endpoint) => { setF({ name: e.name, engine: e.engine, sql: e.sql, params: JSON.stringify(e.params, null, 2), description: e.description }); setSqlKey((k) => k + 1); document.getElementById('ep-name')?.focus(); };
  const remove = (e: Endpoint) => void run(async () => {
    if (!confirm(`Delete endpoint ${e.name} and every version? Its callers get 404.`)) return;
    clearMessages();
    try { await ok(api.DELETE('/api/workspaces/{ws}/data-api/endpoints/{name}', { params: { path: { ws, name: e.name } } })); await list.reload(); say(`Deleted endpoint ${e.name}.`); } catch (x) { reportTo(session)(x); }
  });

  return (
    <>
      <h1>Data API</h1>
      {list.data === undefined ? (list.error ? null : <p aria-busy="true">Loading endpoints…</p>) : list.data.length === 0 ? <p class="empty" id="no-endpoints">No endpoints yet.</p> : (
        <Table caption="Endpoints, latest versions" headers={['Endpoint', 'Version', 'Engine', 'Parameters', 'Columns', 'URL', 'Actions']} id="endpoints-table">
          {list.data.map((e) => (
            <tr key={e.name} data-endpoint={e.name}>
              <th scope="row">{e.name}{e.description ? <div class="muted"><small>{e.description}</small></div> : null}</th>
              <td class="num">{e.version}</td>
              <td>{e.engine}</td>
              <td>{e.params.map((p) => `${p.name}: ${p.type}`).join(', ') || '—'}</td>
              <td>{e.columns?.map((c) => `${c.name} ${c.type}`).join(', ') ?? '—'}</td>
              <td><span class="url-line"><code>{e.url}</code><CopyButton text={e.url} what="endpoint URL" label={`Copy the URL of ${e.name}`} /></span></td>
              <td class="actions">
                <Button class="small" aria-expanded={open === e.name ? 'true' : 'false'} aria-controls="endpoint-detail" aria-label={`${open === e.name ? 'Close' : 'Open'} ${e.name}`} onClick={() => setOpen(open === e.name ? null : e.name)}>{open === e.name ? 'Close' : 'Open'}</Button>
                {editor ? <>
                <Button class="secondary small" aria-label={`Edit ${e.name}`} onClick={() => edit(e)}>Edit</Button>
                <Button class="secondary outline small" busy={busy} aria-label={`Delete ${e.name}`} onClick={() => remove(e)}>Delete</Button>
                </> : null}
              </td>
            </tr>
          ))}
        </Table>
      )}
      {open && list.data?.some((e) => e.name === open) ? <EndpointTry key={open} ws={ws} e={list.data.find((e) => e.name === open)!} /> : null}
      {editor ? (
        <section aria-labelledby="publish-title">
          <h2 id="publish-title">Publish an endpoint</h2>
          <form aria-labelledby="publish-title" onSubmit={publish}>
            <div class="grid">
              <div><label for="ep-name">Name</label><input id="ep-name" required maxLength={63} spellcheck={false} value={f.name} onInput={set('name')} /></div>
              <div><label for="ep-engine">Engine</label><input id="ep-engine" required maxLength={63} spellcheck={false} value={f.engine} onInput={set('engine')} /></div>
            </div>
            <label for="ep-description">Description</label><input id="ep-description" maxLength={4000} value={f.description} onInput={set('description')} />
            <label for="ep-sql">SQL</label>
            <SqlEditor key={sqlKey} id="ep-sql" label="Endpoint SQL" value={f.sql} onChange={(sql) => setF((x) => ({ ...x, sql }))} rows="small" />
            <label for="ep-params">Parameters (JSON)</label><textarea id="ep-params" class="mono" rows={3} spellcheck={false} value={f.params} onInput={set('params')} aria-describedby="ep-params-help" />
            <small id="ep-params-help">A list of {'{"name", "type"}'} (string, integer, number, boolean, date, timestamp) with optional default, minimum, maximum, max_length, enum; used in SQL as $name.</small>
            <FormError text={err} />
            <Button type="submit" busy={busy}>Publish</Button>
          </form>
        </section>
      ) : null}
      {admin && list.data ? <DataApiClient ws={ws} endpoints={list.data.map((e) => e.name)} /> : null}
      {/* Calls are written in batches about a second after they end: Refresh reads them again. */}
      {admin ? <div class="title-row"><h2>Access log</h2><Button class="secondary outline small" onClick={() => void log.reload()}>Refresh log</Button></div> : null}
      {!admin || log.data === undefined ? null : log.data.length === 0 ? <p class="empty" id="no-calls">No calls yet.</p> : (
        <Table caption="Calls to the Data API, newest first" headers={['When', 'Client', 'Call', 'Status', 'Rows', 'Bytes', 'ms']} id="access-log-table">
          {log.data.map((l) => (
            <tr key={l.id}><th scope="row">{when(l.at)}</th><td>{l.client_name ? <span title={l.client ?? ''}>{l.client_name}</span> : <code>{l.client ?? '—'}</code>}</td><td>{l.method} {l.endpoint ?? l.path}{l.version ? ` v${l.version}` : ''}</td>
              <td class="num">{l.status}</td><td class="num">{l.rows ?? ''}</td><td class="num">{l.bytes ?? ''}</td><td class="num">{l.duration_ms ?? ''}</td></tr>
          ))}
        </Table>
      )}
    </>
  );
}
