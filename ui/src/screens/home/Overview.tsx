// A workspace at a glance, as Kestra's and Grafana's home pages are: executions over time by
// state (a chart), what runs now, the recent failures with their error, the flows whose last run
// failed and the alerts that fired, and a way in for an empty workspace (create a flow, run SQL,
// browse the catalog). Loaded as its own chunk, so the first load stays the shell and sign-in.
import { useEffect, useState } from 'preact/hooks';
import { api, ok } from '../../api/client';
import { Chart } from '../../components/chart/Chart';
import type { ChartData } from '../../components/chart/types';
import { ShortId } from '../../components/Copy';
import { may } from '../../lib/access';
import { href } from '../../lib/router';
import { useSession } from '../../lib/session';
import { span, Time } from '../../lib/time';
import { useLoad } from '../../lib/useLoad';
import { StateTag } from '../executions/states';
import '../../styles/screens.css';

const RANGES = { '24h': { hours: 24, bucket: 'hour' as const, label: 'Last 24 hours' }, '7d': { hours: 168, bucket: 'day' as const, label: 'Last 7 days' }, '30d': { hours: 720, bucket: 'day' as const, label: 'Last 30 days' } };
type Range = keyof typeof RANGES;
/** The chart's states, bottom to top, with their palette colour. */
export const STATE_COLOURS: Array<[string, string]> = [['SUCCESS', 'success'], ['FAILED', 'danger'], ['KILLED', 'warning'], ['RUNNING', '1'], ['CREATED', 'muted'], ['KILLING', '2']];

export function statsChart(buckets: Array<{ at: string; state: string; count: number }>, since: number, hours: number, bucket: 'hour' | 'day'): ChartData {
  const step = bucket === 'hour' ? 3_600_000 : 86_400_000;
  const start = Math.floor(since / step) * step;
  const slots = Math.ceil((since + hours * 3_600_000 - start) / step);
  const x = Array.from({ length: slots }, (_, i) => (start + i * step) / 1000);
  const index = new Map(x.map((t, i) => [t, i]));
  const series = STATE_COLOURS.map(([state, color]) => ({ label: state, color, values: x.map(() => 0 as number | null) }));
  for (const b of buckets) {
    const i = index.get(Date.parse(b.at) / 1000);
    const s = series.find((v) => v.label === b.state);
    if (i !== undefined && s) s.values[i] = (s.values[i] ?? 0) + b.count;
  }
  return { kind: 'stacked', time: true, x, series: series.filter((s) => s.values.some((v) => v)), xLabel: bucket === 'hour' ? 'Hour' : 'Day', yLabel: 'Executions' };
}

export function Overview({ ws }: { ws: string }) {
  const { me } = useSession();
  const [range, setRange] = useState<Range>('24h');
  const [now, setNow] = useState(Date.now());
  const r = RANGES[range];
  const since = now - r.hours * 3_600_000;
  const path = { ws };
  const stats = useLoad(async () => (await ok(api.GET('/workflows/v1/{ws}/executions/stats', { params: { path, query: { since: new Date(since).toISOString(), bucket: r.bucket } } }))).buckets, [ws, range, now]);
  const failed = useLoad(async () => (await ok(api.GET('/workflows/v1/{ws}/executions', { params: { path, query: { state: 'FAILED', limit: 5 } } }))).executions, [ws, now]);
  const running = useLoad(async () => (await ok(api.GET('/workflows/v1/{ws}/executions', { params: { path, query: { state: 'RUNNING', limit: 10 } } }))).executions, [ws, now]);
  const flows = useLoad(async () => (await ok(api.GET('/workflows/v1/{ws}/flows', { params: { path, query: { limit: 500, offset: 0 } } }))).flows, [ws, now]);
  const alerts = useLoad(async () => (await ok(api.GET('/api/workspaces/{ws}/alerts', { params: { path } }))).alerts, [ws, now]);
  // Refreshed every 15 s while shown.
  useEffect(() => { const t = setInterval(() => setNow(Date.now()), 15_000); return () => clearInterval(t); }, []);

  const empty = flows.data !== undefined && flows.data.length === 0 && (stats.data ?? []).length === 0;
  const failing = (flows.data ?? []).filter((f) => f.last_execution?.state === 'FAILED');
  const firing = (alerts.data ?? []).filter((a) => a.state !== 'ok');
  const total = (stats.data ?? []).reduce((n, b) => n + b.count, 0);
  const count = (state: string) => (stats.data ?? []).filter((b) => b.state === state).reduce((n, b) => n + b.count, 0);

  if (empty) {
    return (
      <section aria-labelledby="h-start" class="get-started" id="get-started">
        <h2 id="h-start">Get started in {ws}</h2>
        <p>Nothing has run in this workspace yet. Three ways in:</p>
        <ol class="start-steps">
          <li><strong>Create a flow</strong>: a YAML workflow of tasks, run on demand or on a schedule. {may(me, ws, 'ws_editor') ? <a class="button small" href={href.flowNew(ws)}>Create a flow</a> : <span class="muted">(needs ws_editor)</span>}</li>
          <li><strong>Run SQL</strong> on the embedded engine or one of the workspace's engines. <a class="button small secondary" href={href.sql(ws)}>Open the SQL console</a></li>
          <li><strong>Browse the catalog</strong>: the Iceberg tables and views of the warehouse. <a class="button small secondary" href={href.catalog(ws)}>Browse the catalog</a></li>
        </ol>
      </section>
    );
  }
  return (
    <>
      <section aria-labelledby="h-activity" class="overview-activity">
        <div class="title-row">
          <h2 id="h-activity">Executions in {ws}</h2>
          <div><label for="overview-range" class="visually-hidden">Time range</label>
            <select id="overview-range" value={range} onChange={(e) => setRange(e.currentTarget.value as Range)}>
              {Object.entries(RANGES).map(([k, v]) => <option key={k} value={k}>{v.label}</option>)}
            </select></div>
        </div>
        <ul class="tiles" id="overview-tiles">
          <li><a href={href.executions(ws, { state: 'RUNNING' })}><strong>{running.data?.length ?? '…'}</strong> running now</a></li>
          <li><a href={href.executions(ws, { range })}><strong>{total}</strong> started ({r.label.toLowerCase()})</a></li>
          <li><a href={href.executions(ws, { state: 'FAILED', range })}><strong class={count('FAILED') ? 'error-text' : undefined}>{count('FAILED')}</strong> failed</a></li>
          <li><a href={href.executions(ws, { state: 'SUCCESS', range })}><strong>{count('SUCCESS')}</strong> succeeded</a></li>
        </ul>
        {stats.data ? <Chart id="executions-chart" title={`Executions by state, ${r.label.toLowerCase()}`} data={statsChart(stats.data, since, r.hours, r.bucket)} /> : <p aria-busy="true">Loading…</p>}
      </section>
      <div class="grid overview-lists">
        <section aria-labelledby="h-running">
          <h2 id="h-running">Running now</h2>
          {running.data === undefined ? null : running.data.length === 0 ? <p class="empty" id="none-running">Nothing is running.</p> : (
            <ul class="plain" id="running-list">{running.data.map((e) => (
              <li key={e.id}><ShortId id={e.id} href={href.execution(ws, e.id)} what="execution id" /> <a href={href.flow(ws, e.namespace, e.flow_id)}>{e.namespace}.{e.flow_id}</a> <span class="muted">for {span(Date.now() - Date.parse(e.started_at ?? e.created_at))}</span></li>
            ))}</ul>
          )}
        </section>
        <section aria-labelledby="h-failures">
          <h2 id="h-failures">Recent failures</h2>
          {failed.data === undefined ? null : failed.data.length === 0 ? <p class="empty" id="no-failures">No failed executions.</p> : (
            <ul class="plain failures" id="failures-list">{failed.data.map((e) => (
              <li key={e.id}><ShortId id={e.id} href={href.execution(ws, e.id)} what="execution id" /> <a href={href.flow(ws, e.namespace, e.flow_id)}>{e.namespace}.{e.flow_id}</a> <Time iso={e.ended_at ?? e.created_at} />
                {e.error ? <div class="error-text small-text">{e.error}</div> : null}</li>
            ))}</ul>
          )}
        </section>
      </div>
      <section aria-labelledby="h-attention" id="attention">
        <h2 id="h-attention">Needs attention</h2>
        {failing.length === 0 && firing.length === 0 ? <p class="empty" id="all-well">No flow's last run failed and no alert is firing.</p> : (
          <ul class="plain">
            {failing.map((f) => <li key={`${f.namespace}.${f.id}`} data-attention={`flow ${f.namespace}.${f.id}`}><StateTag state="FAILED" /> flow <a href={href.flow(ws, f.namespace, f.id)}>{f.namespace}.{f.id}</a>: its last run <a href={href.execution(ws, f.last_execution!.id)}>failed</a> <Time iso={f.last_execution!.created_at} /></li>)}
            {firing.map((a) => <li key={a.id} data-attention={`alert ${a.name}`}><span class={`state alert-${a.state}`}>{a.state}</span> alert <a href={href.alert(ws, a.id)}>{a.name}</a> since <Time iso={a.state_since} /></li>)}
          </ul>
        )}
      </section>
    </>
  );
}
