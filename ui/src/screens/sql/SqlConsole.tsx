// The SQL workbench (`#/w/<ws>/sql?query=<id>`), as SQL Lab's: the catalog's and the embedded
// engine's tables in a tree beside the editor (click to insert), an engine picker, CodeMirror
// (Ctrl+Enter runs), Run through the query API (`POST .../queries`, which answers within
// `wait_ms` or with the pending query, then polled), the running statement's elapsed time and
// Cancel, and below it tabs: the result (a virtualized grid, downloads), a chart of it in one
// click, and the searchable history, whose entries reopen a query (its id is in the URL).
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ok } from '../../api/client';
import { Button, FormError, useBusy } from '../../components/ui';
import { Tabs } from '../../components/Tabs';
import { SqlEditor } from '../../editor/lazy';
import type { SqlEditorHandle } from '../../editor/SqlEditor';
import { href, replaceQuery } from '../../lib/router';
import { reportTo, useSession } from '../../lib/session';
import { useLoad } from '../../lib/useLoad';
import { QueryHistory } from './QueryHistory';
import { Elapsed, QueryResult, QueryState } from './QueryResult';
import { ResultChart } from './ResultChart';
import { SchemaTree } from './SchemaTree';
import { QUERY_ENDED, type Query } from './queries';
import '../../styles/screens.css';

const POLL_MS = 500;
const DEFAULT_SQL = 'SELECT 42 AS answer';
type Tab = 'result' | 'chart' | 'history';

export function SqlConsole({ ws, query }: { ws: string; query: URLSearchParams }) {
  const session = useSession();
  const openId = query.get('query') ?? '';
  const [engine, setEngine] = useState('embedded');
  // `?sql=` prefills the editor (the catalog's "Query" link); nothing runs until the person does.
  const [sql, setSql] = useState(() => (query.get('sql') ?? '').slice(0, 100_000) || DEFAULT_SQL);
  const [current, setCurrent] = useState<Query | null>(null);
  const [formError, setFormError] = useState('');
  const [running, run] = useBusy();
  const [cancelling, cancelRun] = useBusy();
  const [historyTick, setHistoryTick] = useState(0);
  const [tab, setTab] = useState<Tab>('result');
  const [now, setNow] = useState(Date.now());
  const editor = useRef<SqlEditorHandle | null>(null);
  const engines = useLoad(async () => (await ok(api.GET('/api/workspaces/{ws}/engines', { params: { path: { ws } } }))).engines, [ws]);

  // A query named in the URL (a history entry, a reload) is loaded with its SQL and engine.
  useEffect(() => {
    if (!openId || current?.id === openId) return;
    let gone = false;
    void ok(api.GET('/api/workspaces/{ws}/queries/{id}', { params: { path: { ws, id: openId } } })).then((q) => {
      if (gone) return;
      setCurrent(q); setSql(q.sql); setEngine(q.engine); setTab('result');
    }, reportTo(session, setFormError));
    return () => { gone = true; };
  }, [ws, openId]);

  // Live state: poll the query until it ends (the elapsed time ticks with it); the history follows when it does.
  const live = current !== null && !QUERY_ENDED.has(current.state);
  useEffect(() => {
    if (!live || !current) return;
    const id = current.id;
    const tick = setInterval(() => setNow(Date.now()), 100);
    const t = setInterval(() => {
      void ok(api.GET('/api/workspaces/{ws}/queries/{id}', { params: { path: { ws, id } } })).then((q) => {
        setCurrent((c) => (c?.id === id ? q : c));
        if (QUERY_ENDED.has(q.state)) setHistoryTick((n) => n + 1);
      }, reportTo(session, setFormError));
    }, POLL_MS);
    return () => { clearInterval(t); clearInterval(tick); };
  }, [live, current?.id]);

  /** Runs `text`: the editor's own text when it comes from Ctrl+Enter (a render's copy can be a frame behind). */
  const submit = (text: string) => {
    if (running || live) return;
    if (!text.trim()) { setFormError('Write a statement first.'); return; }
    setFormError('');
    void run(async () => {
      try {
        // A short wait: a quick query comes back ended; a long one comes back pending and is
        // followed by polling, so the page never hangs on one request.
        const q = await ok(api.POST('/api/workspaces/{ws}/queries', { params: { path: { ws } }, body: { sql: text, engine, wait_ms: 1000 } }));
        setCurrent(q);
        setNow(Date.now());
        if (tab === 'history') setTab('result');
        replaceQuery(href.sql(ws), { query: q.id });
        setHistoryTick((n) => n + 1);
      } catch (err) { reportTo(session, setFormError)(err); }
    });
  };
  const cancel = () => {
    if (!current) return;
    const id = current.id;
    void cancelRun(async () => {
      try {
        await ok(api.POST('/api/workspaces/{ws}/queries/{id}/cancel', { params: { path: { ws, id } } }));
      } catch (err) { reportTo(session, setFormError)(err); }
    });
  };
  const named = (engines.data ?? []).map((e) => e.name);
  const ended = current?.state === 'SUCCEEDED' && (current.columns?.length ?? 0) > 0;
  return (
    <>
      <h1>SQL console</h1>
      <div class="workbench">
        <SchemaTree ws={ws} onInsert={(text) => editor.current?.insert(text)} />
        <div class="workbench-main">
          <form aria-label="Query" onSubmit={(ev) => { ev.preventDefault(); submit(editor.current?.text() ?? sql); }}>
            <div class="row">
              <div>
                <label for="sql-engine">Engine</label>
                <select id="sql-engine" value={engine} onChange={(e) => setEngine(e.currentTarget.value)}>
                  <option value="embedded">embedded (DuckDB)</option>
                  {(engines.data ?? []).map((e) => <option key={e.name} value={e.name}>{e.name} ({e.kind}, {e.state})</option>)}
                  {engine !== 'embedded' && !named.includes(engine) ? <option value={engine}>{engine}</option> : null}
                </select>
              </div>
            </div>
            <label for="sql-source">SQL</label>
            <SqlEditor id="sql-source" label="SQL statement" value={sql} onChange={setSql} onRun={submit} handle={(h) => { editor.current = h; }} />
            <p class="muted"><small>One statement per query. Ctrl+Enter runs it.</small></p>
            <FormError text={formError} />
            <div class="actions">
              <Button type="submit" busy={running} disabled={live}>Run</Button>
              {live && current ? <>
                <Button class="secondary" id="cancel-query" busy={cancelling} disabled={current.cancel_requested} onClick={cancel}>Cancel query</Button>
                <span class="muted">Running for <Elapsed query={current} now={now} /></span>
              </> : null}
            </div>
          </form>
          <QueryState query={current} />
          <Tabs id="sql-tabs" label="Query views" current={tab} onSelect={(t) => setTab(t as Tab)}
            tabs={[{ id: 'result', label: 'Result' }, { id: 'chart', label: 'Chart' }, { id: 'history', label: 'History' }]}>
            {tab === 'result' ? <QueryResult ws={ws} query={current} />
              : tab === 'chart' ? (ended ? <ResultChart key={current!.id} id="result-chart" columns={current!.columns!} rows={current!.preview ?? []} /> : <p class="empty" id="no-chart">Run a query that returns rows to chart them.</p>)
              : <QueryHistory ws={ws} tick={historyTick} current={current?.id} />}
          </Tabs>
        </div>
      </div>
    </>
  );
}
