// Creating or editing an alert or a report (ws_editor): SQL on an engine, for an alert a condition
// on its result (row count or one value compared to a threshold), for a report its content (the
// result as CSV or a table, or a screenshot of a page, which needs no SQL), a cron schedule in a
// time zone, the grace period and the recipients. Recipient URLs are credentials the server never answers, so editing shows their
// origins and leaves them as they are unless new ones are typed (PUT without `recipients`).
import { useState } from 'preact/hooks';
import { api, ok } from '../../api/client';
import { Button, FormError, useBusy } from '../../components/ui';
import { reportTo, useSession } from '../../lib/session';
import { paths, type Alert, type Kind } from './alerts';

const OPS = ['>', '>=', '<', '<=', '==', '!='] as const;
type Op = (typeof OPS)[number];
interface Condition { type: 'row_count' | 'value'; op: Op; threshold: number; column?: string }
interface Content { type: 'csv' | 'table' | 'screenshot'; path?: string }

/** Recipients typed one per line: `<url>` (a webhook) or `slack <url>`. */
function parseRecipients(text: string): Array<{ type: 'webhook' | 'slack'; url: string }> {
  return text.split('\n').map((l) => l.trim()).filter(Boolean).map((l) => {
    const m = /^(webhook|slack)\s+(\S+)$/.exec(l);
    return m ? { type: m[1] as 'webhook' | 'slack', url: m[2] } : { type: 'webhook' as const, url: l };
  });
}

export function AlertForm({ ws, kind = 'alert', alert, onSaved }: { ws: string; kind?: Kind; alert?: Alert; onSaved(a: Alert & { signing_secret?: string }): void }) {
  const session = useSession();
  const cond = (alert?.condition ?? { type: 'row_count', op: '>', threshold: 0 }) as Condition;
  const content = (alert?.content ?? { type: 'csv' }) as Content;
  const id = (field: string) => `${kind}-${field}`;
  const [f, setF] = useState({
    name: alert?.name ?? '', description: alert?.description ?? '', engine: alert?.engine ?? 'embedded', sql: alert?.sql ?? '',
    type: cond.type, op: cond.op, threshold: String(cond.threshold), column: cond.column ?? '',
    cron: alert?.cron ?? '*/5 * * * *', timezone: alert?.timezone ?? 'UTC', grace: String(alert?.grace_secs ?? 3600),
    recipients: '', enabled: alert?.enabled ?? true, content: content.type, path: content.path ?? '/',
  });
  const [err, setErr] = useState('');
  const [busy, run] = useBusy();
  const set = (k: keyof typeof f) => (e: Event) => setF({ ...f, [k]: (e.currentTarget as HTMLInputElement).value });

  const save = async (ev: Event) => {
    ev.preventDefault();
    setErr('');
    const threshold = Number(f.threshold);
    if (kind === 'alert' && !Number.isFinite(threshold)) { setErr('The threshold must be a number.'); return; }
    const recipients = parseRecipients(f.recipients);
    const common = {
      name: f.name.trim(), description: f.description, engine: f.engine.trim(), sql: f.sql, cron: f.cron.trim(), timezone: f.timezone.trim(),
      grace_secs: Number(f.grace) || 0, enabled: f.enabled,
    };
    const body = kind === 'alert' ? {
      ...common,
      condition: f.type === 'value' ? { type: 'value' as const, op: f.op, threshold, ...(f.column.trim() ? { column: f.column.trim() } : {}) } : { type: 'row_count' as const, op: f.op, threshold },
    } : { ...common, content: f.content === 'screenshot' ? { type: 'screenshot' as const, path: f.path.trim() } : { type: f.content } };
    // Both kinds share the routes' shapes but for the condition or content (docs/alerts.md).
    const p = paths(kind);
    try {
      const saved = await run(() => (alert
        ? ok(api.PUT(p.one, { params: { path: { ws, id: alert.id } }, body: (recipients.length ? { ...body, recipients } : body) as never }))
        : ok(api.POST(p.list, { params: { path: { ws } }, body: { ...body, recipients } as never }))));
      onSaved(saved);
    } catch (e) { reportTo(session, setErr)(e); }
  };

  return (
    <form aria-label={alert ? `Edit ${kind} ${alert.name}` : `New ${kind}`} onSubmit={save}>
      <div class="grid">
        <div><label for={id('name')}>Name</label><input id={id('name')} required maxLength={128} value={f.name} onInput={set('name')} /></div>
        <div><label for={id('engine')}>Engine</label><input id={id('engine')} required maxLength={63} spellcheck={false} value={f.engine} onInput={set('engine')} /></div>
      </div>
      <label for={id('description')}>Description</label><input id={id('description')} maxLength={2000} value={f.description} onInput={set('description')} />
      <label for={id('sql')}>SQL{kind === 'report' && f.content === 'screenshot' ? ' (not used by a screenshot)' : ''}</label><textarea id={id('sql')} required={kind === 'alert' || f.content !== 'screenshot'} rows={4} spellcheck={false} class="mono" value={f.sql} onInput={set('sql')} />
      {kind === 'alert' ? (
        <fieldset class="grid">
          <legend>Condition</legend>
          <div><label for={id('ctype')}>Check</label>
            <select id={id('ctype')} value={f.type} onChange={set('type')}><option value="row_count">number of rows</option><option value="value">a value of the single row</option></select></div>
          <div><label for={id('op')}>Comparison</label>
            <select id={id('op')} value={f.op} onChange={set('op')}>{OPS.map((o) => <option key={o} value={o}>{o}</option>)}</select></div>
          <div><label for={id('threshold')}>Threshold</label><input id={id('threshold')} required inputMode="decimal" value={f.threshold} onInput={set('threshold')} /></div>
          {f.type === 'value' ? <div><label for={id('column')}>Column (first if empty)</label><input id={id('column')} maxLength={255} value={f.column} onInput={set('column')} /></div> : null}
        </fieldset>
      ) : (
        <fieldset class="grid">
          <legend>Content</legend>
          <div><label for={id('content')}>Send</label>
            <select id={id('content')} value={f.content} onChange={set('content')}><option value="csv">the result as CSV</option><option value="table">the result as a table</option><option value="screenshot">a screenshot of a page</option></select></div>
          {f.content === 'screenshot' ? <div><label for={id('path')}>Page path (below the public URL)</label><input id={id('path')} required maxLength={1024} spellcheck={false} value={f.path} onInput={set('path')} /></div> : null}
        </fieldset>
      )}
      <div class="grid">
        <div><label for={id('cron')}>Schedule (cron)</label><input id={id('cron')} required maxLength={128} spellcheck={false} value={f.cron} onInput={set('cron')} /></div>
        <div><label for={id('tz')}>Time zone</label><input id={id('tz')} required maxLength={64} value={f.timezone} onInput={set('timezone')} /></div>
        <div><label for={id('grace')}>Grace period (seconds)</label><input id={id('grace')} type="number" min={0} max={2592000} value={f.grace} onInput={set('grace')} /></div>
      </div>
      <label for={id('recipients')}>Recipients{alert ? ' (empty keeps the current ones)' : ''}</label>
      <textarea id={id('recipients')} rows={2} spellcheck={false} required={!alert} value={f.recipients} onInput={set('recipients')} aria-describedby={id('recipients-help')} />
      <small id={id('recipients-help')}>One per line: a webhook URL, or <code>slack</code> and the incoming-webhook URL.{alert ? ` Now: ${alert.recipients.map((r) => `${r.type} ${r.target}`).join(', ')}.` : ''}</small>
      <label class="check"><input type="checkbox" checked={f.enabled} onChange={(e) => setF({ ...f, enabled: e.currentTarget.checked })} /> Enabled (runs on its schedule)</label>
      <FormError text={err} />
      <Button type="submit" busy={busy}>{alert ? `Save ${kind}` : `Create ${kind}`}</Button>
    </form>
  );
}
