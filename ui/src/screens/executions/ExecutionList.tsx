// Executions of a workspace, newest first: what a person scans for (id with a copy button, flow,
// state, start to the second, duration), filters kept in the URL (namespace, flow, state, a time
// range preset, a search in the page) and real paging: "Older" follows the server's cursor (kept in
// the URL, so a page is a link and Back returns to the newer one). Refreshed every 2 s while any
// shown execution is still running.
import { useEffect, useState } from 'preact/hooks';
import { api, ok } from '../../api/client';
import { Table } from '../../components/ui';
import { ShortId } from '../../components/Copy';
import { href, replaceQuery } from '../../lib/router';
import { Time } from '../../lib/time';
import { useLoad } from '../../lib/useLoad';
import { StateTag, STATES, TERMINAL, duration } from './states';

type State = (typeof STATES)[number];
export const RANGES: Record<string, { label: string; hours: number }> = {
  '1h': { label: 'Last hour', hours: 1 }, '24h': { label: 'Last 24 hours', hours: 24 }, '7d': { label: 'Last 7 days', hours: 168 }, '30d': { label: 'Last 30 days', hours: 720 },
};
const PAGE = 50;

export function ExecutionList({ ws, query }: { ws: string; query: URLSearchParams }) {
  const stateParam = query.get('state') ?? '';
  const state: State | '' = (STATES as readonly string[]).includes(stateParam) ? stateParam as State : '';
  const range = RANGES[query.get('range') ?? ''] ? query.get('range')! : '';
  const applied = { namespace: query.get('namespace') ?? '', flowId: query.get('flowId') ?? '', state, range, q: query.get('q') ?? '' };
  const cursor = query.get('cursor') ?? '';
  const [form, setForm] = useState(applied);
  // A link to other filters (the home page's tiles, Back) keeps this screen: the form follows the URL.
  useEffect(() => setForm(applied), [query.toString()]);
  // The time range is fixed when the list is asked (a page of "last hour" does not slide while read).
  const list = useLoad(async () => ok(api.GET('/workflows/v1/{ws}/executions', {
    params: { path: { ws }, query: {
      namespace: applied.namespace || undefined, flowId: applied.flowId || undefined, state: applied.state || undefined, limit: PAGE,
      after: range ? new Date(Date.now() - RANGES[range].hours * 3_600_000).toISOString() : undefined, cursor: cursor || undefined,
    } },
  })), [ws, query.toString()]);

  // Live state: poll while something shown can still change.
  const rows = list.data?.executions ?? [];
  const live = rows.some((e) => !TERMINAL.has(e.state));
  useEffect(() => {
    if (!live) return;
    const t = setInterval(() => { void list.reload(); }, 2000);
    return () => clearInterval(t);
  }, [live, query.toString()]);

  const params = (f: typeof form, more: Record<string, string | undefined> = {}) => ({
    namespace: f.namespace.trim() || undefined, flowId: f.flowId.trim() || undefined, state: f.state || undefined, range: f.range || undefined, q: f.q.trim() || undefined, ...more,
  });
  const apply = (ev: Event) => { ev.preventDefault(); replaceQuery(href.executions(ws), params(form)); };
  const set = (k: keyof typeof form) => (e: Event) => setForm({ ...form, [k]: (e.currentTarget as HTMLInputElement).value });
  const needle = applied.q.trim().toLowerCase();
  const shown = rows.filter((e) => !needle || `${e.id} ${e.namespace}.${e.flow_id} ${e.state} ${e.error ?? ''}`.toLowerCase().includes(needle));

  return (
    <>
      <h1>Executions</h1>
      <form class="row filters" role="search" aria-label="Filter executions" onSubmit={apply}>
        <div class="grow"><label for="ex-q">Search</label><input id="ex-q" type="search" value={form.q} maxLength={200} spellcheck={false} placeholder="id, flow or error" onInput={set('q')} /></div>
        <div class="grow"><label for="ex-ns">Namespace</label><input id="ex-ns" value={form.namespace} maxLength={200} spellcheck={false} onInput={set('namespace')} /></div>
        <div class="grow"><label for="ex-flow">Flow id</label><input id="ex-flow" value={form.flowId} maxLength={100} spellcheck={false} onInput={set('flowId')} /></div>
        <div><label for="ex-state">State</label>
          <select id="ex-state" value={form.state} onChange={set('state')}>
            <option value="">any</option>
            {STATES.map((s) => <option key={s} value={s}>{s}</option>)}
          </select>
        </div>
        <div><label for="ex-range">Time range</label>
          <select id="ex-range" value={form.range} onChange={set('range')}>
            <option value="">all time</option>
            {Object.entries(RANGES).map(([k, v]) => <option key={k} value={k}>{v.label}</option>)}
          </select>
        </div>
        <button type="submit">Filter</button>
      </form>
      {list.data === undefined ? (list.error ? null : <p aria-busy="true">Loading executions…</p>) : shown.length === 0 ? <p class="empty" id="no-executions">No executions match.</p> : (
        <Table caption="Executions, newest first" headers={['Execution', 'Flow', 'State', 'Started', 'Duration']} id="executions-table">
          {shown.map((e) => (
            <tr key={e.id} data-execution={e.id}>
              <th scope="row"><ShortId id={e.id} href={href.execution(ws, e.id)} what="execution id" /></th>
              <td><a href={href.flow(ws, e.namespace, e.flow_id)}>{e.namespace}.{e.flow_id}</a> <small class="muted">rev {e.flow_revision}</small></td>
              <td><StateTag state={e.state} /></td>
              <td><Time iso={e.started_at ?? e.created_at} /></td>
              <td class="num">{duration(e.started_at, e.ended_at)}</td>
            </tr>
          ))}
        </Table>
      )}
      <nav class="pager actions" aria-label="Pages of executions">
        {cursor ? <a role="button" class="secondary outline small" href={href.executions(ws, params(applied))} id="newest-page">Newest</a> : null}
        {list.data?.next_cursor ? <a role="button" class="secondary small" id="older-page" href={href.executions(ws, params(applied, { cursor: list.data.next_cursor }))}>Older</a> : null}
      </nav>
    </>
  );
}
