// Creating or editing an alert (ws_editor): SQL on an engine, a condition on its result (row count
// or one value compared to a threshold), a cron schedule in a time zone, the grace period and the
// recipients. Recipient URLs are credentials the server never answers, so editing shows their
// origins and leaves them as they are unless new ones are typed (PUT without `recipients`).
import { useState } from 'preact/hooks';
import { api, ok } from '../../api/client';
import { Button, FormError, useBusy } from '../../components/ui';
import { reportTo, useSession } from '../../lib/session';
import type { Alert } from './alerts';

const OPS = ['>', '>=', '<', '<=', '==', '!='] as const;
type Op = (typeof OPS)[number];
interface Condition { type: 'row_count' | 'value'; op: Op; threshold: number; column?: string }

/** Recipients typed one per line: `<url>` (a webhook) or `slack <url>`. */
function parseRecipients(text: string): Array<{ type: 'webhook' | 'slack'; url: string }> {
  return text.split('\n').map((l) => l.trim()).filter(Boolean).map((l) => {
    const m = /^(webhook|slack)\s+(\S+)$/.exec(l);
    return m ? { type: m[1] as 'webhook' | 'slack', url: m[2] } : { type: 'webhook' as const, url: l };
  });
}

export function AlertForm({ ws, alert, onSaved }: { ws: string; alert?: Alert; onSaved(a: Alert & { signing_secret?: string }): void }) {
  const session = useSession();
  const cond = (alert?.condition ?? { type: 'row_count', op: '>', threshold: 0 }) as Condition;
  const [f, setF] = useState({
    name: alert?.name ?? '', description: alert?.description ?? '', engine: alert?.engine ?? 'embedded', sql: alert?.sql ?? '',
    type: cond.type, op: cond.op, threshold: String(cond.threshold), column: cond.column ?? '',
    cron: alert?.cron ?? '*/5 * * * *', timezone: alert?.timezone ?? 'UTC', grace: String(alert?.grace_secs ?? 3600),
    recipients: '', enabled: alert?.enabled ?? true,
  });
  const [err, setErr] = useState('');
  const [busy, run] = useBusy();
  const set = (k: keyof typeof f) => (e: Event) => setF({ ...f, [k]: (e.currentTarget as HTMLInputElement).value });

  const save = async (ev: Event) => {
    ev.preventDefault();
    setErr('');
    const threshold = Number(f.threshold);
    if (!Number.isFinite(threshold)) { setErr('The threshold must be a number.'); return; }
    const recipients = parseRecipients(f.recipients);
    const body = {
      name: f.name.trim(), description: f.description, engine: f.engine.trim(), sql: f.sql, cron: f.cron.trim(), timezone: f.timezone.trim(),
      grace_secs: Number(f.grace) || 0, enabled: f.enabled,
      condition: f.type === 'value' ? { type: 'value' as const, op: f.op, threshold, ...(f.column.trim() ? { column: f.column.trim() } : {}) } : { type: 'row_count' as const, op: f.op, threshold },
    };
    try {
      const saved = await run(() => (alert
        ? ok(api.PUT('/api/workspaces/{ws}/alerts/{id}', { params: { path: { ws, id: alert.id } }, body: recipients.length ? { ...body, recipients } : body }))
        : ok(api.POST('/api/workspaces/{ws}/alerts', { params: { path: { ws } }, body: { ...body, recipients } }))));
      onSaved(saved);
    } catch (e) { reportTo(session, setErr)(e); }
  };

  return (
    <form aria-label={alert ? `Edit alert ${alert.name}` : 'New alert'} onSubmit={save}>
      <div class="grid">
        <div><label for="alert-name">Name</label><input id="alert-name" required maxLength={128} value={f.name} onInput={set('name')} /></div>
        <div><label for="alert-engine">Engine</label><input id="alert-engine" required maxLength={63} spellcheck={false} value={f.engine} onInput={set('engine')} /></div>
      </div>
      <label for="alert-description">Description</label><input id="alert-description" maxLength={2000} value={f.description} onInput={set('description')} />
      <label for="alert-sql">SQL</label><textarea id="alert-sql" required rows={4} spellcheck={false} class="mono" value={f.sql} onInput={set('sql')} />
      <fieldset class="grid">
        <legend>Condition</legend>
        <div><label for="alert-ctype">Check</label>
          <select id="alert-ctype" value={f.type} onChange={set('type')}><option value="row_count">number of rows</option><option value="value">a value of the single row</option></select></div>
        <div><label for="alert-op">Comparison</label>
          <select id="alert-op" value={f.op} onChange={set('op')}>{OPS.map((o) => <option key={o} value={o}>{o}</option>)}</select></div>
        <div><label for="alert-threshold">Threshold</label><input id="alert-threshold" required inputMode="decimal" value={f.threshold} onInput={set('threshold')} /></div>
        {f.type === 'value' ? <div><label for="alert-column">Column (first if empty)</label><input id="alert-column" maxLength={255} value={f.column} onInput={set('column')} /></div> : null}
      </fieldset>
      <div class="grid">
        <div><label for="alert-cron">Schedule (cron)</label><input id="alert-cron" required maxLength={128} spellcheck={false} value={f.cron} onInput={set('cron')} /></div>
        <div><label for="alert-tz">Time zone</label><input id="alert-tz" required maxLength={64} value={f.timezone} onInput={set('timezone')} /></div>
        <div><label for="alert-grace">Grace period (seconds)</label><input id="alert-grace" type="number" min={0} max={2592000} value={f.grace} onInput={set('grace')} /></div>
      </div>
      <label for="alert-recipients">Recipients{alert ? ' (empty keeps the current ones)' : ''}</label>
      <textarea id="alert-recipients" rows={2} spellcheck={false} required={!alert} value={f.recipients} onInput={set('recipients')} aria-describedby="alert-recipients-help" />
      <small id="alert-recipients-help">One per line: a webhook URL, or <code>slack</code> and the incoming-webhook URL.{alert ? ` Now: ${alert.recipients.map((r) => `${r.type} ${r.target}`).join(', ')}.` : ''}</small>
      <label class="check"><input type="checkbox" checked={f.enabled} onChange={(e) => setF({ ...f, enabled: e.currentTarget.checked })} /> Enabled (runs on its schedule)</label>
      <FormError text={err} />
      <Button type="submit" busy={busy}>{alert ? 'Save alert' : 'Create alert'}</Button>
    </form>
  );
}
