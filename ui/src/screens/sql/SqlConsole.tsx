// The SQL console (`#/w/<ws>/sql?query=<id>`): pick an engine (the embedded DuckDB engine or one
// of the workspace's engines), write SQL in CodeMirror, run it through the query API
// (`POST .../queries`, which answers within `wait_ms` or with the pending query), follow its
// state live until it ends, cancel it while it runs, preview its rows, download the whole result
// as CSV, JSON or Parquet, and reopen any query of the history (kept in the URL).
import { useEffect, useState } from 'preact/hooks';
import { api, ok } from '../../api/client';
import { Button, FormError, useBusy } from '../../components/ui';
import { SqlEditor } from '../../editor/lazy';
import { href, replaceQuery } from '../../lib/router';
import { reportTo, useSession } from '../../lib/session';
import { useLoad } from '../../lib/useLoad';
import { QueryHistory } from './QueryHistory';
import { QueryResult } from './QueryResult';
import { QUERY_ENDED, type Query } from './queries';

const POLL_MS = 500;
const DEFAULT_SQL = 'SELECT 42 AS answer';

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
  const engines = useLoad(async () => (await ok(api.GET('/api/workspaces/{ws}/engines', { params: { path: { ws } } }))).engines, [ws]);

  // A query named in the URL (a history entry, a reload) is loaded with its SQL and engine.
  useEffect(() => {
    if (!openId || current?.id === openId) return;
    let gone = false;
    void ok(api.GET('/api/workspaces/{ws}/queries/{id}', { params: { path: { ws, id: openId } } })).then((q) => {
      if (gone) return;
      setCurrent(q); setSql(q.sql); setEngine(q.engine);
    }, reportTo(session, setFormError));
    return () => { gone = true; };
  }, [ws, openId]);

  // Live state: poll the query until it ends; the history follows when it does.
  const live = current !== null && !QUERY_ENDED.has(current.state);
  useEffect(() => {
    if (!live || !current) return;
    const id = current.id;
    const t = setInterval(() => {
      void ok(api.GET('/api/workspaces/{ws}/queries/{id}', { params: { path: { ws, id } } })).then((q) => {
        setCurrent((c) => (c?.id === id ? q : c));
        if (QUERY_ENDED.has(q.state)) setHistoryTick((n) => n + 1);
      }, reportTo(session, setFormError));
    }, POLL_MS);
    return () => clearInterval(t);
  }, [live, current?.id]);

  const submit = (ev?: Event) => {
    ev?.preventDefault();
    if (running || live) return;
    if (!sql.trim()) { setFormError('Write a statement first.'); return; }
    setFormError('');
    void run(async () => {
      try {
        // A short wait: a quick query comes back ended; a long one comes back pending and is
        // followed by polling, so the page never hangs on one request.
        const q = await ok(api.POST('/api/workspaces/{ws}/queries', { params: { path: { ws } }, body: { sql, engine, wait_ms: 1000 } }));
        setCurrent(q);
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
  return (
    <>
      <h1>SQL console</h1>
      <form aria-label="Query" onSubmit={submit}>
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
        <SqlEditor id="sql-source" label="SQL statement" value={sql} onChange={setSql} onRun={() => submit()} />
        <p class="muted"><small>One statement per query. Ctrl+Enter runs it.</small></p>
        <FormError text={formError} />
        <div class="actions">
          <Button type="submit" busy={running} disabled={live}>Run</Button>
          {live ? <Button class="secondary" id="cancel-query" busy={cancelling} disabled={current?.cancel_requested} onClick={cancel}>Cancel query</Button> : null}
        </div>
      </form>
      <QueryResult ws={ws} query={current} />
      <QueryHistory ws={ws} tick={historyTick} current={current?.id} />
    </>
  );
}
