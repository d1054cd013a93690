// Database and storage connections of a workspace (`#/w/<ws>/connections`): every member reads
// the list (name, kind, settings, whether a secret is stored); ws_admin registers and deletes
// them. The secret is write-only: typed into password inputs, sent once, sealed by the server and
// never returned (the list says only "sealed"). The API has no update: a changed connection is
// deleted and registered again.
import { Fragment } from 'preact';
import { useState } from 'preact/hooks';
import { api, ok } from '../../api/client';
import { Button, FormError, Table, useBusy, when } from '../../components/ui';
import { may } from '../../lib/access';
import { clearMessages, say } from '../../lib/messages';
import { reportTo, useSession } from '../../lib/session';
import { useFocusAfter, useLoad } from '../../lib/useLoad';
import { PairRows, type Pair } from './fields';

type Kind = 'database' | 'storage';
type SecretMode = 'none' | 'password' | 'credentials';
/** The settings and credentials a kind usually needs, offered as empty rows. */
const SUGGESTED: Record<Kind, { config: string[]; secret: SecretMode; credentials: string[] }> = {
  database: { config: ['host', 'port', 'database', 'user'], secret: 'password', credentials: [] },
  storage: { config: ['endpoint', 'bucket', 'region'], secret: 'credentials', credentials: ['access_key_id', 'secret_access_key'] },
};
const rowsOf = (keys: string[]): Pair[] => keys.map((key) => ({ key, value: '' }));

/** A setting typed as text: whole numbers and true/false become JSON numbers and booleans (a port is a number). */
function settingValue(v: string): unknown {
  if (/^-?\d{1,15}$/.test(v)) return Number(v);
  if (v === 'true' || v === 'false') return v === 'true';
  return v;
}
const shown = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v));

function blank(kind: Kind) {
  return { name: '', kind, config: rowsOf(SUGGESTED[kind].config), mode: SUGGESTED[kind].secret, password: '', credentials: rowsOf(SUGGESTED[kind].credentials) };
}

export function Connections({ ws }: { ws: string }) {
  const session = useSession();
  const admin = may(session.me, ws, 'ws_admin');
  const list = useLoad(async () => (await ok(api.GET('/api/workspaces/{ws}/connections', { params: { path: { ws } } }))).connections, [ws]);
  const [f, setF] = useState(() => blank('database'));
  const [err, setErr] = useState('');
  const [busy, run] = useBusy();
  const focus = useFocusAfter();

  const create = async (ev: Event) => {
    ev.preventDefault();
    clearMessages(); setErr('');
    const config = Object.fromEntries(f.config.filter((r) => r.key.trim() && r.value !== '').map((r) => [r.key.trim(), settingValue(r.value.trim())]));
    const secret = f.mode === 'password' ? (f.password || undefined)
      : f.mode === 'credentials' ? Object.fromEntries(f.credentials.filter((r) => r.key.trim() && r.value !== '').map((r) => [r.key.trim(), r.value]))
      : undefined;
    try {
      const c = await run(() => ok(api.POST('/api/workspaces/{ws}/connections', { params: { path: { ws } }, body: {
        name: f.name.trim(), kind: f.kind, config,
        secret: secret && (typeof secret === 'string' || Object.keys(secret).length) ? secret : undefined,
      } })));
      setF(blank(f.kind));
      await list.reload();
      say(`Registered connection ${c.name}${c.has_secret ? '; its secret is sealed and will not be shown' : ''}.`);
    } catch (e) { reportTo(session, setErr)(e); }
  };
  const remove = async (name: string) => {
    if (!confirm(`Delete connection ${name} and its sealed secret? What uses it can no longer connect.`)) return;
    clearMessages();
    try {
      await run(() => ok(api.DELETE('/api/workspaces/{ws}/connections/{name}', { params: { path: { ws, name } } })));
      await list.reload();
      say(`Deleted connection ${name}.`);
      focus('connections-title');
    } catch (e) { reportTo(session)(e); }
  };

  return (
    <>
      <h1 id="connections-title" tabIndex={-1}>Connections</h1>
      <p class="lead">Databases and object stores the workspace's components connect to. Secrets are sealed on the server and never shown again.</p>
      {list.data === undefined ? (list.error ? null : <p aria-busy="true">Loading connections…</p>) : list.data.length === 0 ? <p class="empty" id="no-connections">No connections yet.</p> : (
        <Table caption="Connections of the workspace" headers={['Name', 'Kind', 'Settings', 'Secret', 'Created', ...(admin ? ['Actions'] : [])]} id="connections-table">
          {list.data.map((c) => (
            <tr key={c.name} data-connection={c.name}>
              <th scope="row">{c.name}</th>
              <td>{c.kind}</td>
              <td>{Object.keys(c.config).length === 0 ? <span class="muted">none</span> : <dl class="facts">{Object.entries(c.config).sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => <Fragment key={k}><dt>{k}</dt><dd><code>{shown(v)}</code></dd></Fragment>)}</dl>}</td>
              <td>{c.has_secret ? <span class="badge">sealed</span> : <span class="muted">none</span>}</td>
              <td>{when(c.created_at)}</td>
              {admin ? <td class="actions"><Button class="danger small" busy={busy} aria-label={`Delete ${c.name}`} onClick={() => remove(c.name)}>Delete</Button></td> : null}
            </tr>
          ))}
        </Table>
      )}
      {admin ? (
        <section aria-labelledby="h-new-connection">
          <h2 id="h-new-connection">Register a connection</h2>
          <form class="card" id="connection-form" onSubmit={create} aria-busy={busy ? 'true' : undefined}>
            <div class="grid">
              <div><label for="connection-name">Name</label>
                <input id="connection-name" required maxLength={63} spellcheck={false} autocomplete="off" value={f.name} aria-describedby="connection-name-help" onInput={(e) => setF({ ...f, name: e.currentTarget.value })} />
                <small id="connection-name-help">Lower-case letters, digits, _ and -.</small></div>
              <div><label for="connection-kind">Kind</label>
                <select id="connection-kind" value={f.kind} onChange={(e) => { const k = e.currentTarget.value as Kind; setF({ ...blank(k), name: f.name }); }}>
                  <option value="database">Database</option>
                  <option value="storage">Storage (object store)</option>
                </select></div>
            </div>
            <PairRows prefix="config" legend="Settings (not secret)" rows={f.config} onChange={(config) => setF({ ...f, config })} keyLabel="Setting" addLabel="Add a setting" />
            <small>Whole numbers and true/false are sent as numbers and booleans. Credentials go in the secret below: a setting that looks like one is refused.</small>
            <fieldset>
              <legend>Secret (write-only)</legend>
              <label for="connection-secret-mode">Secret</label>
              <select id="connection-secret-mode" value={f.mode} onChange={(e) => setF({ ...f, mode: e.currentTarget.value as SecretMode })}>
                <option value="none">No secret</option>
                <option value="password">A password</option>
                <option value="credentials">Named credentials</option>
              </select>
              {f.mode === 'password' ? <><label for="connection-password">Password</label>
                <input id="connection-password" type="password" maxLength={65536} autocomplete="new-password" value={f.password} onInput={(e) => setF({ ...f, password: e.currentTarget.value })} /></> : null}
              {f.mode === 'credentials' ? <PairRows prefix="credential" legend="Credentials" secret rows={f.credentials} onChange={(credentials) => setF({ ...f, credentials })} keyLabel="Credential" valueLabel="Secret value" addLabel="Add a credential" /> : null}
              <small>Sealed with the server's master key; it is never returned, only whether one is stored.</small>
            </fieldset>
            <FormError text={err} />
            <Button type="submit" busy={busy}>Register connection</Button>
          </form>
        </section>
      ) : null}
    </>
  );
}
