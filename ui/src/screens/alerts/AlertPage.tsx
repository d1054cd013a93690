// One alert or report (`#/w/<ws>/alerts/<id>`, `#/w/<ws>/reports/<id>`, also the
// `#/workspaces/<ws>/{alerts,reports}/<id>` link of its notifications) or a new one
// (`.../new`): its state and since when, the facts, Run now
// (`POST .../run`, notifying as a scheduled run would), Edit and Delete for ws_editor, the signing
// secret once after creation, and its history: evaluations (outcome, value, error, notification)
// and deliveries (polled every 2 s for a while after Run now).
import { useEffect, useState } from 'preact/hooks';
import { api, ok } from '../../api/client';
import { Button, Table, useBusy, when } from '../../components/ui';
import { may } from '../../lib/access';
import { clearMessages, say, sayAfterNavigation } from '../../lib/messages';
import { reportTo, useSession } from '../../lib/session';
import { useLoad } from '../../lib/useLoad';
import { AlertForm } from './AlertForm';
import { KIND, conditionText, contentText, paths, type Kind } from './alerts';
import { ValueChart } from './ValueChart';

/** The signing secret of an alert just created, handed to its page once (never stored elsewhere). */
let createdSecret = '';

const show = (v: unknown) => (v === null || v === undefined ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v));

export function AlertPage({ ws, id, kind = 'alert' }: { ws: string; id?: string; kind?: Kind }) {
  const session = useSession();
  const k = KIND[kind];
  const p = paths(kind);
  const title = kind === 'alert' ? 'Alert' : 'Report';
  const editor = may(session.me, ws, 'ws_editor');
  const [editing, setEditing] = useState(false);
  const [secret, setSecret] = useState(() => { const s = createdSecret; createdSecret = ''; return s; });
  const [follow, setFollow] = useState(0);
  const [busy, run] = useBusy();
  const alert = useLoad(async () => (id ? ok(api.GET(p.one, { params: { path: { ws, id } } })) : null), [ws, id]);
  const evals = useLoad(async () => (id ? (await ok(api.GET(p.evaluations, { params: { path: { ws, id }, query: { limit: 50 } } }))).evaluations : []), [ws, id]);
  const deliveries = useLoad(async () => (id ? (await ok(api.GET(p.deliveries, { params: { path: { ws, id } } }))).deliveries : []), [ws, id]);

  // After Run now, follow the evaluation and its deliveries for a while (60 polls, two minutes).
  useEffect(() => {
    if (follow <= 0) return;
    const t = setTimeout(() => { void alert.reload(); void evals.reload(); void deliveries.reload(); setFollow((n) => n - 1); }, 2000);
    return () => clearTimeout(t);
  }, [follow]);

  if (!id) {
    if (!editor) return <><h1>New {k.one}</h1><p>Creating {k.many} needs the ws_editor role.</p></>;
    return <><h1>New {k.one}</h1><AlertForm ws={ws} kind={kind} onSaved={(a) => { createdSecret = a.signing_secret ?? ''; sayAfterNavigation(`Created ${k.one} ${a.name}.`); location.hash = k.page(ws, a.id); }} /></>;
  }
  const a = alert.data;
  if (!a) return alert.error ? <h1>{title}</h1> : <p aria-busy="true">Loading the {k.one}…</p>;

  const runNow = () => void run(async () => {
    clearMessages();
    try { await ok(api.POST(p.run, { params: { path: { ws, id } } })); say(`Evaluating ${a.name} now.`); setFollow(60); } catch (e) { reportTo(session)(e); }
  });
  const remove = () => void run(async () => {
    if (!confirm(`Delete ${k.one} ${a.name}? Its history goes with it.`)) return;
    try { await ok(api.DELETE(p.one, { params: { path: { ws, id } } })); sayAfterNavigation(`Deleted ${k.one} ${a.name}.`); location.hash = k.list(ws); } catch (e) { reportTo(session)(e); }
  });

  return (
    <>
      <nav aria-label="Breadcrumb" class="crumbs"><ul><li><a href={k.list(ws)}>{k.title}</a></li><li>{a.name}</li></ul></nav>
      <div class="title-row"><h1>{a.name}</h1>
        {editor ? <div class="actions">
          <Button busy={busy} onClick={runNow}>Run now</Button>
          <Button class="secondary" aria-expanded={editing} onClick={() => setEditing(!editing)}>{editing ? 'Close editor' : 'Edit'}</Button>
          <Button class="secondary outline" busy={busy} onClick={remove}>Delete</Button>
        </div> : null}
      </div>
      <p id={`${kind}-state`} role="status" aria-live="polite">State: <span class={`state alert-${a.state}`}>{a.state}</span> since {when(a.state_since)}{a.enabled ? '' : ' (disabled)'}</p>
      {secret ? <article class="secret-once" id="secret-panel"><label for="signing-secret">Signing secret (shown once: receivers verify Svc-Signature with it)</label><input id="signing-secret" readOnly value={secret} /><Button class="secondary" onClick={() => setSecret('')}>I have stored it</Button></article> : null}
      {editing ? <AlertForm ws={ws} kind={kind} alert={a} onSaved={() => { setEditing(false); say(`Saved ${k.one} ${a.name}.`); void alert.reload(); }} /> : (
        <dl class="facts">
          {a.description ? <><dt>Description</dt><dd>{a.description}</dd></> : null}
          {kind === 'alert' ? <><dt>Condition</dt><dd><code>{conditionText(a.condition)}</code></dd></>
            : <><dt>Content</dt><dd><code>{contentText(a.content)}</code></dd></>}
          {a.sql ? <><dt>SQL</dt><dd><code class="sql-snippet">{a.sql}</code> on {a.engine}</dd></> : null}
          <dt>Schedule</dt><dd><code>{a.cron}</code> ({a.timezone}); next {when(a.next_fire_at) || '—'}</dd>
          <dt>Grace period</dt><dd>{a.grace_secs} s; last notified {when(a.last_notified_at) || 'never'}</dd>
          <dt>Recipients</dt><dd>{a.recipients.map((r) => `${r.type} ${r.target}`).join(', ')}</dd>
        </dl>
      )}
      {kind === 'alert' && evals.data ? <ValueChart alert={a} evaluations={evals.data} /> : null}
      <h2>Evaluations</h2>
      {(evals.data ?? []).length === 0 ? <p class="empty">No evaluations yet.</p> : (
        <Table caption="Evaluations, newest first" headers={['Slot', 'Outcome', 'Value', 'Error', 'Notification']} id="evaluations-table">
          {evals.data!.map((e) => (
            <tr key={e.id}><th scope="row">{when(e.scheduled_for)}{e.manual ? ' (manual)' : ''}</th><td>{e.outcome ?? 'running'}</td><td>{show(e.value)}</td><td class="error-text">{e.error ?? ''}</td><td>{e.notification ?? ''}</td></tr>
          ))}
        </Table>
      )}
      <h2>Deliveries</h2>
      {(deliveries.data ?? []).length === 0 ? <p class="empty">No deliveries yet.</p> : (
        <Table caption="Deliveries, newest first" headers={['Event', 'Recipient', 'Status', 'Attempts', 'HTTP', 'Error']} id="deliveries-table">
          {deliveries.data!.map((d) => (
            <tr key={d.id}><th scope="row">{d.event}</th><td>{d.channel} {d.target}</td><td>{d.status}</td><td class="num">{d.attempts}</td><td>{d.http_status ?? ''}</td><td class="error-text">{d.error ?? ''}</td></tr>
          ))}
        </Table>
      )}
    </>
  );
}
