// The audit log (platform_admin), newest first: the kind filter is the server's, kept in the URL
// with the text filter (actor, action, target, workspace, searched in the loaded page); allowed
// reads, which drown the rest, are left out unless asked for (`reads=1`); "Older events" pages
// with `before`.
import { useState } from 'preact/hooks';
import { api, ok } from '../api/client';
import type { Body } from '../api/types';
import { Button, Table, when } from '../components/ui';
import { replaceQuery } from '../lib/router';
import { isPlatformAdmin, reportTo, useSession } from '../lib/session';
import { useLoad } from '../lib/useLoad';

type Event = Body<'/api/audit', 'get'>['events'][number];
const KINDS = ['authz', 'governance', 'auth'] as const;
type Kind = (typeof KINDS)[number];

export function Audit({ query }: { query: URLSearchParams }) {
  const session = useSession();
  const admin = isPlatformAdmin(session.me);
  const kindParam = query.get('kind') ?? '';
  const kind: Kind | '' = (KINDS as readonly string[]).includes(kindParam) ? kindParam as Kind : '';
  const q = query.get('q') ?? '';
  const reads = query.get('reads') === '1';
  const [form, setForm] = useState({ kind, q, reads });
  const [older, setOlder] = useState<Event[]>([]);
  const page = useLoad(async () => {
    setOlder([]);
    return admin ? ok(api.GET('/api/audit', { params: { query: { kind: kind || undefined, limit: 100, hide_reads: reads ? undefined : 'true' } } })) : { events: [], next_before: null };
  }, [kind, reads]);
  const [next, setNext] = useState<string | null | undefined>(undefined);
  const cursor = next === undefined ? page.data?.next_before ?? null : next;

  if (!admin) return <><h1>Audit log</h1><p>This screen needs the platform_admin role.</p></>;

  const more = async () => {
    if (!cursor) return;
    try {
      const r = await ok(api.GET('/api/audit', { params: { query: { kind: kind || undefined, limit: 100, before: cursor, hide_reads: reads ? undefined : 'true' } } }));
      setOlder([...older, ...r.events]);
      setNext(r.next_before);
    } catch (e) { reportTo(session)(e); }
  };
  const needle = q.trim().toLowerCase();
  const events = [...(page.data?.events ?? []), ...older].filter((e) => !needle
    || [e.actor, e.action, e.target, e.workspace].some((v) => (v ?? '').toLowerCase().includes(needle)));

  return (
    <>
      <h1>Audit log</h1>
      <form class="row filters" role="search" aria-label="Filter audit events" onSubmit={(ev) => { ev.preventDefault(); replaceQuery('#/audit', { kind: form.kind || undefined, q: form.q.trim() || undefined, reads: form.reads ? '1' : undefined }); }}>
        <div><label for="audit-kind">Kind</label>
          <select id="audit-kind" value={form.kind} onChange={(e) => setForm({ ...form, kind: e.currentTarget.value as Kind | '' })}>
            <option value="">any</option>
            {KINDS.map((k) => <option key={k} value={k}>{k}</option>)}
          </select>
        </div>
        <div class="grow"><label for="audit-q">Actor, action, target or workspace</label>
          <input id="audit-q" type="search" value={form.q} maxLength={200} onInput={(e) => setForm({ ...form, q: e.currentTarget.value })} />
        </div>
        <label class="check"><input type="checkbox" id="audit-reads" checked={form.reads} onChange={(e) => setForm({ ...form, reads: e.currentTarget.checked })} /> Show allowed reads</label>
        <button type="submit">Filter</button>
      </form>
      {page.data === undefined ? (page.error ? null : <p aria-busy="true">Loading events…</p>) : events.length === 0 ? <p class="empty">No events match.</p> : (
        <Table caption="Audit events, newest first" headers={['When', 'Kind', 'Action', 'Actor', 'Target', 'Workspace', 'Decision']} id="audit-table">
          {events.map((e) => (
            <tr key={e.id} data-action={e.action}>
              <th scope="row">{when(e.at)}</th>
              <td>{e.kind}</td>
              <td><code>{e.action}</code></td>
              <td>{e.actor ?? '—'}</td>
              <td>{e.target ?? '—'}</td>
              <td>{e.workspace ?? '—'}</td>
              <td>{e.decision ?? ''}</td>
            </tr>
          ))}
        </Table>
      )}
      {cursor ? <Button class="secondary" onClick={more}>Older events</Button> : null}
    </>
  );
}
