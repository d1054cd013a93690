// OAuth clients of the machine identity provider (platform_admin): the list, a create form, and
// rotate/delete per row. A new or rotated secret is shown once, in a panel with a copy button,
// and never again (only its hash is stored); leaving the screen forgets it.
import { useRef, useState } from 'preact/hooks';
import { api, ok } from '../api/client';
import { Button, FormError, Table, useBusy, when } from '../components/ui';
import { SecretOnce } from '../components/SecretOnce';
import { clearMessages, say } from '../lib/messages';
import { isPlatformAdmin, reportTo, useSession } from '../lib/session';
import { useLoad } from '../lib/useLoad';

const split = (s: string) => s.split(/[\s,]+/).map((x) => x.trim()).filter(Boolean);

export function Clients() {
  const session = useSession();
  const admin = isPlatformAdmin(session.me);
  const list = useLoad(async () => (admin ? (await ok(api.GET('/api/clients'))).clients : []), []);
  const [secret, setSecret] = useState<{ clientId: string; value: string } | null>(null);
  const [err, setErr] = useState('');
  const [busy, run] = useBusy();
  const [exchange, setExchange] = useState(false);
  const name = useRef<HTMLInputElement>(null);
  const audiences = useRef<HTMLInputElement>(null);
  const scopes = useRef<HTMLInputElement>(null);
  const workspace = useRef<HTMLInputElement>(null);

  if (!admin) return <><h1>OAuth clients</h1><p>This screen needs the platform_admin role.</p></>;

  const create = async (ev: Event) => {
    ev.preventDefault();
    clearMessages();
    setErr('');
    try {
      const c = await run(() => ok(api.POST('/api/clients', { body: {
        name: name.current!.value.trim(), audiences: split(audiences.current!.value), scopes: split(scopes.current!.value),
        grant_types: exchange ? ['client_credentials', 'urn:ietf:params:oauth:grant-type:token-exchange'] : ['client_credentials'],
        workspace: workspace.current!.value.trim() || null,
      } })));
      setSecret({ clientId: c.client_id, value: c.client_secret });
      for (const r of [name, audiences, scopes, workspace]) r.current!.value = '';
      await list.reload();
      say(`Created client ${c.name}. Copy its secret now: it is not shown again.`);
    } catch (e) { reportTo(session, setErr)(e); }
  };
  const rotate = async (id: string, label: string) => {
    if (!window.confirm(`Rotate the secret of ${label}? The old secret stops working at once.`)) return;
    clearMessages();
    try {
      const c = await ok(api.POST('/api/clients/{id}/rotate', { params: { path: { id } } }));
      setSecret({ clientId: c.client_id, value: c.client_secret });
      await list.reload();
      say(`Rotated the secret of ${label}. Copy it now: it is not shown again.`);
    } catch (e) { reportTo(session)(e); }
  };
  const remove = async (id: string, label: string) => {
    if (!window.confirm(`Delete client ${label}? Tokens already issued stay valid until they expire.`)) return;
    clearMessages();
    try {
      await ok(api.DELETE('/api/clients/{id}', { params: { path: { id } } }));
      if (secret?.clientId === id) setSecret(null);
      await list.reload();
      say(`Deleted client ${label}.`);
    } catch (e) { reportTo(session)(e); }
  };

  return (
    <>
      <h1>OAuth clients</h1>
      <p class="lead">Machine identities of the platform's token endpoint (client credentials, token exchange). A secret is shown once, when the client is created or its secret rotated.</p>
      {secret ? <SecretOnce title={`Secret of ${secret.clientId}`} label="Client secret" value={secret.value} onDone={() => setSecret(null)} /> : null}
      {list.data === undefined ? (list.error ? null : <p aria-busy="true">Loading clients…</p>) : list.data.length === 0 ? <p class="empty">No clients yet.</p> : (
        <Table caption="OAuth clients" headers={['Name', 'Client id', 'Audiences', 'Grants', 'Workspace', 'Secret rotated', 'Actions']} id="clients-table">
          {list.data.map((c) => (
            <tr key={c.client_id} data-client={c.name}>
              <th scope="row">{c.name}</th>
              <td><code>{c.client_id}</code></td>
              <td>{c.audiences.join(', ')}</td>
              <td>{c.grant_types.map((g) => (g.startsWith('urn:') ? 'token exchange' : 'client credentials')).join(', ')}</td>
              <td>{c.workspace ?? <span class="muted">any</span>}</td>
              <td>{when(c.secret_rotated_at)}</td>
              <td class="actions">
                <Button class="secondary small" aria-label={`Rotate secret of ${c.name}`} onClick={() => rotate(c.client_id, c.name)}>Rotate</Button>
                <Button class="danger small" aria-label={`Delete ${c.name}`} onClick={() => remove(c.client_id, c.name)}>Delete</Button>
              </td>
            </tr>
          ))}
        </Table>
      )}
      <section aria-labelledby="h-new-client">
        <h2 id="h-new-client">Create a client</h2>
        <form class="card" id="client-form" onSubmit={create} aria-busy={busy ? 'true' : undefined}>
          <FormError text={err} />
          <label for="client-name">Name</label>
          <input ref={name} id="client-name" required maxLength={255} autocomplete="off" />
          <label for="client-audiences">Audiences</label>
          <input ref={audiences} id="client-audiences" required maxLength={4000} aria-describedby="client-audiences-hint" spellcheck={false} />
          <small id="client-audiences-hint">The services its tokens are for, separated by commas or spaces.</small>
          <label for="client-scopes">Scopes</label>
          <input ref={scopes} id="client-scopes" maxLength={4000} aria-describedby="client-scopes-hint" spellcheck={false} />
          <small id="client-scopes-hint">Allowed scopes; empty allows any well-formed scope.</small>
          <label for="client-workspace">Workspace</label>
          <input ref={workspace} id="client-workspace" maxLength={63} aria-describedby="client-workspace-hint" spellcheck={false} />
          <small id="client-workspace-hint">Binds the client to one workspace; empty for none.</small>
          <label class="check"><input type="checkbox" id="client-exchange" checked={exchange} onChange={(e) => setExchange(e.currentTarget.checked)} /> May exchange tokens (token exchange grant)</label>
          <button type="submit" disabled={busy}>Create client</button>
        </form>
      </section>
    </>
  );
}
