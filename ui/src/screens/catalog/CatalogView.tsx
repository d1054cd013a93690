// A view of the catalog (`#/w/<ws>/catalog/views/<ns>/<name>`): the SQL of its current version
// (one block per dialect), its default namespace, its schema and its properties.
import { api, ok } from '../../api/client';
import { when } from '../../components/ui';
import { NS_SEP } from '../../lib/router';
import { useLoad } from '../../lib/useLoad';
import { Columns, Crumbs, Problem, Properties } from './parts';

export function CatalogView({ ws, namespace, name }: { ws: string; namespace: string[]; name: string }) {
  const v = useLoad(() => ok(api.GET('/api/workspaces/{ws}/catalog/namespaces/{namespace}/views/{name}', { params: { path: { ws, namespace: namespace.join(NS_SEP), name } } })), [ws, namespace.join(NS_SEP), name]);
  const full = [...namespace, name].join('.');
  const d = v.data;
  return (
    <>
      <Crumbs ws={ws} namespace={namespace} />
      <h1>View <code>{full}</code></h1>
      {!d ? (v.error ? <Problem error={v.error} /> : <p aria-busy="true">Loading the view…</p>) : (
        <>
          <dl class="facts" id="view-facts">
            <dt>Version</dt><dd>{d.version_id ?? '—'} of {d.versions}</dd>
            <dt>Created</dt><dd>{d.timestamp ? <time dateTime={d.timestamp}>{when(d.timestamp)}</time> : '—'}</dd>
            <dt>Default namespace</dt><dd>{d.default_namespace.length ? <code>{d.default_namespace.join('.')}</code> : '—'}</dd>
          </dl>
          <section aria-labelledby="sql-title">
            <h2 id="sql-title">SQL</h2>
            {d.representations.length === 0 ? <p class="muted">This version has no SQL representation.</p> : d.representations.map((r) => (
              <figure key={r.dialect} data-dialect={r.dialect}>
                <figcaption>{r.dialect}</figcaption>
                <pre class="view-sql" tabIndex={0} aria-label={`SQL of ${full} (${r.dialect})`}><code>{r.sql}</code></pre>
              </figure>
            ))}
          </section>
          <section aria-labelledby="schema-title">
            <h2 id="schema-title">Schema</h2>
            <Columns caption={`Columns of ${full}`} columns={d.schema.columns} />
          </section>
          <Properties caption={`Properties of ${full}`} properties={d.properties} />
        </>
      )}
    </>
  );
}
