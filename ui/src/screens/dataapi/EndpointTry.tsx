// One endpoint opened from the list: its URL with a Copy button, a ready `curl` call (the token
// request with a client's id and secret, then the call with the token), and a "try it" form typed
// from the endpoint's parameters (numbers, dates, booleans, lists of allowed values; defaults
// filled, bounds on the inputs) that runs the endpoint's SQL with those values through the query
// API, as the person, and shows the rows.
import { useState } from 'preact/hooks';
import { api, ok } from '../../api/client';
import type { Body } from '../../api/types';
import { Button, FormError, useBusy } from '../../components/ui';
import { CopyButton } from '../../components/Copy';
import { reportTo, useSession } from '../../lib/session';
import { ResultGrid } from '../sql/ResultGrid';
import { QUERY_ENDED, type Query } from '../sql/queries';

type Endpoint = Body<'/api/workspaces/{ws}/data-api/endpoints', 'get'>['endpoints'][number];
type Param = Endpoint['params'][number];

/** The shell commands a program runs: a token from the token endpoint, then the call. */
export function curlOf(e: Endpoint): string {
  const base = e.url.slice(0, e.url.indexOf('/data-api/'));
  const query = e.params.map((p) => `${p.name}=${encodeURIComponent(String(p.default ?? (p.type === 'integer' || p.type === 'number' ? 1 : p.type === 'boolean' ? 'true' : 'value')))}`).join('&');
  return [
    `TOKEN=$(curl -s -u "$CLIENT_ID:$CLIENT_SECRET" -d grant_type=client_credentials \\`,
    `  -d audience=svc-data-api -d scope=data-api:${e.name} ${base}/oauth/token | jq -r .access_token)`,
    `curl -H "Authorization: Bearer $TOKEN" '${e.url}${query ? `?${query}` : ''}'`,
  ].join('\n');
}

function Field({ p, value, set }: { p: Param; value: string; set(v: string): void }) {
  const id = `try-${p.name}`;
  const label = <label for={id}>{p.name} <small class="muted">{p.type}{p.default === undefined ? ', required' : ''}</small></label>;
  if (p.enum?.length) return <div>{label}<select id={id} value={value} onChange={(e) => set(e.currentTarget.value)}>{p.enum.map((v) => <option key={String(v)} value={String(v)}>{String(v)}</option>)}</select></div>;
  if (p.type === 'boolean') return <div>{label}<select id={id} value={value} onChange={(e) => set(e.currentTarget.value)}><option value="true">true</option><option value="false">false</option></select></div>;
  const type = p.type === 'integer' || p.type === 'number' ? 'number' : p.type === 'date' ? 'date' : p.type === 'timestamp' ? 'datetime-local' : 'text';
  return <div>{label}<input id={id} type={type as 'text'} value={value} step={p.type === 'integer' ? 1 : p.type === 'number' ? 'any' : undefined}
    min={p.minimum ?? undefined} max={p.maximum ?? undefined} maxLength={p.max_length ?? undefined} required={p.default === undefined} onInput={(e) => set(e.currentTarget.value)} /></div>;
}

const typed = (p: Param, v: string): string | number | boolean => (p.type === 'integer' || p.type === 'number' ? Number(v) : p.type === 'boolean' ? v === 'true' : v);

export function EndpointTry({ ws, e }: { ws: string; e: Endpoint }) {
  const session = useSession();
  const [values, setValues] = useState<Record<string, string>>(() => Object.fromEntries(e.params.map((p) => [p.name, p.default === undefined ? (p.enum?.length ? String(p.enum[0]) : p.type === 'boolean' ? 'false' : '') : String(p.default)])));
  const [result, setResult] = useState<Query | null>(null);
  const [err, setErr] = useState('');
  const [busy, run] = useBusy();
  const curl = curlOf(e);
  const tryIt = (ev: Event) => {
    ev.preventDefault();
    setErr('');
    void run(async () => {
      try {
        const params = Object.fromEntries(e.params.map((p) => [p.name, typed(p, values[p.name])]));
        let q = await ok(api.POST('/api/workspaces/{ws}/queries', { params: { path: { ws } }, body: { sql: e.sql, engine: e.engine, params, wait_ms: 5000 } }));
        for (let i = 0; i < 60 && !QUERY_ENDED.has(q.state); i++) {
          await new Promise((r) => setTimeout(r, 500));
          q = await ok(api.GET('/api/workspaces/{ws}/queries/{id}', { params: { path: { ws, id: q.id } } }));
        }
        setResult(q);
      } catch (x) { reportTo(session, setErr)(x); }
    });
  };
  return (
    <section class="endpoint-detail" aria-labelledby={`ep-${e.name}-title`} id="endpoint-detail">
      <h2 id={`ep-${e.name}-title`}>Endpoint <code>{e.name}</code> <small class="muted">version {e.version}</small></h2>
      <p class="url-line"><code id="endpoint-url">{e.url}</code> <CopyButton text={e.url} what="endpoint URL" /></p>
      <h3>Call it</h3>
      <p class="hint">A program gets a token with the id and secret of a Data API client (made below by a ws_admin), then calls the URL with it.</p>
      <div class="code-block"><pre id="endpoint-curl" tabIndex={0}>{curl}</pre><CopyButton text={curl} what="curl call" /></div>
      <h3>Try it</h3>
      <form id="try-form" aria-label={`Try ${e.name}`} onSubmit={tryIt}>
        {e.params.length ? <div class="grid">{e.params.map((p) => <Field key={p.name} p={p} value={values[p.name] ?? ''} set={(v) => setValues({ ...values, [p.name]: v })} />)}</div> : <p class="muted">This endpoint takes no parameters.</p>}
        <FormError text={err} />
        <Button type="submit" busy={busy}>Try it</Button>
        <small class="muted"> Runs its SQL with these values on {e.engine}, as you.</small>
      </form>
      {result ? (
        <div id="try-result">
          <p role="status">{result.state === 'SUCCEEDED' ? `${result.rows ?? 0} row${result.rows === 1 ? '' : 's'}.` : <span class="error-text">{result.state}: {result.error}</span>}</p>
          {result.columns?.length ? <ResultGrid caption={`Rows of ${e.name}`} columns={result.columns} rows={result.preview ?? []} /> : null}
        </div>
      ) : null}
    </section>
  );
}
