// Workspace secrets (what flow templates read with `secret('NAME')`): names and when each was
// last set, never a value (the API returns none). A ws_admin sets a secret (a new name or a new
// value for an existing one) and deletes one; other roles see the names only and are offered
// neither (the server refuses them anyway).
import { useState } from 'preact/hooks';
import { api, ok } from '../../api/client';
import { Button, FormError, Table, useBusy, when } from '../../components/ui';
import { may } from '../../lib/access';
import { clearMessages, say } from '../../lib/messages';
import { reportTo, useSession } from '../../lib/session';
import { useFocusAfter, useLoad } from '../../lib/useLoad';

export function Secrets({ ws }: { ws: string }) {
  const session = useSession();
  const admin = may(session.me, ws, 'ws_admin');
  const list = useLoad(async () => (await ok(api.GET('/workflows/v1/{ws}/secrets', { params: { path: { ws } } }))).secrets, [ws]);
  const [name, setName] = useState('');
  const [value, setValue] = useState('');
  const [err, setErr] = useState('');
  const [busy, run] = useBusy();
  const focus = useFocusAfter();

  const set = async (ev: Event) => {
    ev.preventDefault();
    clearMessages(); setErr('');
    const n = name.trim();
    const existed = (list.data ?? []).some((s) => s.name === n);
    try {
      await run(() => ok(api.PUT('/workflows/v1/{ws}/secrets/{name}', { params: { path: { ws, name: n } }, body: { value } })));
      setName(''); setValue('');
      await list.reload();
      say(existed ? `Secret ${n} now has the new value.` : `Set secret ${n}.`);
    } catch (e) { reportTo(session, setErr)(e); }
  };
  const remove = async (n: string) => {
    if (!window.confirm(`Delete secret ${n}? Flows whose templates read it will fail.`)) return;
    clearMessages();
    try {
      await ok(api.DELETE('/workflows/v1/{ws}/secrets/{name}', { params: { path: { ws, name: n } } }));
      await list.reload();
      say(`Deleted secret ${n}.`);
      focus('secret-name');
    } catch (e) { reportTo(session)(e); }
  };

  return (
    <>
      <h1>Secrets</h1>
      <p class="muted">Flows read a secret with <code>{"{{ secret('NAME') }}"}</code>. Values are never shown{admin ? '; setting a name again replaces its value' : ''}.</p>
      {list.data === undefined ? (list.error ? null : <p aria-busy="true">Loading secrets…</p>) : list.data.length === 0 ? <p class="empty" id="no-secrets">This workspace has no secrets.</p> : (
        <Table caption="Workspace secrets (names only)" headers={admin ? ['Name', 'Last set', 'Actions'] : ['Name', 'Last set']} id="secrets-table">
          {list.data.map((s) => (
            <tr key={s.name} data-secret={s.name}>
              <th scope="row"><code>{s.name}</code></th>
              <td>{when(s.updated_at)}</td>
              {admin ? <td><Button class="secondary small danger" aria-label={`Delete secret ${s.name}`} onClick={() => remove(s.name)}>Delete</Button></td> : null}
            </tr>
          ))}
        </Table>
      )}
      {admin ? (
        <section aria-labelledby="h-set-secret">
          <h2 id="h-set-secret">Set a secret</h2>
          <form onSubmit={set}>
            <div class="grid">
              <div><label for="secret-name">Name</label><input id="secret-name" required maxLength={128} autocomplete="off" spellcheck={false} value={name} onInput={(e) => setName(e.currentTarget.value)} /></div>
              <div><label for="secret-value">Value</label><input id="secret-value" type="password" required maxLength={65536} autocomplete="new-password" value={value} onInput={(e) => setValue(e.currentTarget.value)} /></div>
            </div>
            <FormError text={err} />
            <button type="submit" disabled={busy} aria-busy={busy ? 'true' : undefined}>Set secret</button>
          </form>
        </section>
      ) : <p class="muted" id="secrets-admin-only">Only a ws_admin of {ws} sets and deletes secrets.</p>}
    </>
  );
}
