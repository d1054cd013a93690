// Making a Data API consumer (ws_admin, `POST .../data-api/clients`): a client of the machine
// identity provider bound to the workspace, for the audience svc-data-api and scoped to the
// endpoints ticked (or every endpoint of the workspace). Its secret is shown once, with what a
// program needs to get a token (token endpoint, audience, scopes).
import { useState } from 'preact/hooks';
import { api, ok } from '../../api/client';
import type { Body } from '../../api/types';
import { Button, FormError, useBusy } from '../../components/ui';
import { SecretOnce } from '../../components/SecretOnce';
import { clearMessages, say } from '../../lib/messages';
import { reportTo, useSession } from '../../lib/session';

type Created = Body<'/api/workspaces/{ws}/data-api/clients', 'post'>;

export function DataApiClient({ ws, endpoints }: { ws: string; endpoints: string[] }) {
  const session = useSession();
  const [name, setName] = useState('');
  const [all, setAll] = useState(false);
  const [picked, setPicked] = useState<string[]>([]);
  const [created, setCreated] = useState<Created | null>(null);
  const [err, setErr] = useState('');
  const [busy, run] = useBusy();

  const create = async (ev: Event) => {
    ev.preventDefault();
    clearMessages(); setErr('');
    try {
      const c = await run(() => ok(api.POST('/api/workspaces/{ws}/data-api/clients', { params: { path: { ws } }, body: { name: name.trim(), endpoints: all ? ['*'] : picked } })));
      setCreated(c);
      setName(''); setPicked([]); setAll(false);
      say(`Created client ${c.name}. Copy its secret now: it is not shown again.`);
    } catch (e) { reportTo(session, setErr)(e); }
  };

  return (
    <section aria-labelledby="h-data-api-client">
      <h2 id="h-data-api-client">Create a client</h2>
      <p class="hint">A program calls the Data API with a token of the service's token endpoint (client credentials); the client may call only the endpoints chosen here.</p>
      {created ? (
        <SecretOnce title={`Secret of ${created.name}`} label="Client secret" value={created.client_secret} onDone={() => setCreated(null)}>
          <dl class="facts" id="client-facts">
            <dt>Client id</dt><dd><code>{created.client_id}</code></dd>
            <dt>Token endpoint</dt><dd><code>{created.token_endpoint}</code></dd>
            <dt>Audience</dt><dd><code>{created.audience}</code></dd>
            <dt>Scopes</dt><dd><code>{created.scopes.join(' ')}</code></dd>
          </dl>
        </SecretOnce>
      ) : null}
      <form class="card" id="data-api-client-form" onSubmit={create} aria-busy={busy ? 'true' : undefined}>
        <label for="dac-name">Client name</label>
        <input id="dac-name" required maxLength={255} autocomplete="off" value={name} onInput={(e) => setName(e.currentTarget.value)} />
        <fieldset>
          <legend>Endpoints it may call</legend>
          <label class="check"><input type="checkbox" id="dac-all" checked={all} onChange={(e) => setAll(e.currentTarget.checked)} /> Every endpoint of the workspace, present and future</label>
          {endpoints.map((e) => (
            <label class="check" key={e}><input type="checkbox" disabled={all} checked={!all && picked.includes(e)}
              onChange={(ev) => setPicked(ev.currentTarget.checked ? [...picked, e] : picked.filter((x) => x !== e))} /> {e}</label>
          ))}
        </fieldset>
        <FormError text={err} />
        <Button type="submit" busy={busy}>Create client</Button>
      </form>
    </section>
  );
}
