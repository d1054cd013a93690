// The current query: its state in a live region (announced as it changes) with the time it has
// run, its error, a notice when the result was cut at the row bound or the preview shows only its
// first rows, the downloads of the whole result, and the preview rows in the result grid.
import { when } from '../../components/ui';
import { StateTag, duration } from '../executions/states';
import { resultUrl, type Query } from './queries';
import { ResultGrid } from './ResultGrid';

export function QueryState({ query: q }: { query: Query | null }) {
  return (
    <p id="query-state" role="status" aria-live="polite" aria-atomic="true">
      {q ? <>Query <code>{q.id.slice(0, 8)}</code> on <strong>{q.engine}</strong>: <StateTag state={q.state} />{' '}
        {q.state === 'SUCCEEDED' ? `${q.rows ?? 0} row${q.rows === 1 ? '' : 's'} in ${duration(q.started_at, q.ended_at)}.` : null}
        {q.cancel_requested && !q.ended_at ? ' Cancelling…' : null}</> : 'No query run yet.'}
    </p>
  );
}

/** Seconds since the query started, to the tenth, while it runs (not in the live region: it would be read every tick). */
export function Elapsed({ query: q, now }: { query: Query; now: number }) {
  const from = Date.parse(q.started_at ?? q.created_at);
  return <span id="query-elapsed" class="elapsed" aria-hidden="true">{Math.max(0, (now - from) / 1000).toFixed(1)} s</span>;
}

export function QueryResult({ ws, query: q }: { ws: string; query: Query | null }) {
  const preview = q?.preview ?? [];
  const columns = q?.columns ?? [];
  return (
    <section aria-labelledby="result-title">
      <h2 id="result-title" class="visually-hidden">Result</h2>
      {q?.error ? <p class="error-text" id="query-error">{q.error}</p> : null}
      {q && q.state === 'SUCCEEDED' ? <>
        {q.truncated ? <p class="notice" id="truncated-notice"><strong>Truncated:</strong> the result had more rows than the engine’s row limit; only the first {q.rows} were kept.</p> : null}
        {q.rows !== null && preview.length < q.rows ? <p class="muted" id="preview-notice">Showing the first {preview.length} of {q.rows} rows; download the result for all of them.</p> : null}
        {q.result_available ? (
          <p class="actions" id="downloads">Download:
            <a href={resultUrl(ws, q.id, 'csv')} download>CSV</a>
            <a href={resultUrl(ws, q.id, 'json')} download>JSON</a>
            <a href={resultUrl(ws, q.id, 'parquet')} download>Parquet</a>
          </p>
        ) : <p class="muted">The result is no longer kept (results are deleted after the retention period).</p>}
        {columns.length > 0 ? <ResultGrid caption={`Rows of query ${q.id.slice(0, 8)}`} columns={columns} rows={preview} /> : null}
        {columns.length > 0 ? <p class="muted"><small>Columns: {columns.map((c) => `${c.name} ${c.type}`).join(', ')}. Ran {when(q.started_at)}.</small></p> : null}
      </> : q ? null : <p class="empty">Run a statement to see its rows here.</p>}
    </section>
  );
}
