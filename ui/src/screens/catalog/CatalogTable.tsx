// A table of the catalog (`#/w/<ws>/catalog/tables/<ns>/<name>`): its current schema (columns,
// types, nullability), partitioning, sort order, snapshots as a timeline (newest first, with
// their summary), refs and properties, and a link to the SQL console with a first query written.
import { api, ok } from '../../api/client';
import type { Body } from '../../api/types';
import { Table, when } from '../../components/ui';
import { href, NS_SEP } from '../../lib/router';
import { useLoad } from '../../lib/useLoad';
import { icebergName } from '../../lib/sqlNames';
import { Columns, Crumbs, Problem, Properties } from './parts';

type TableInfo = Body<'/api/workspaces/{ws}/catalog/namespaces/{namespace}/tables/{name}', 'get'>;


function Snapshots({ t }: { t: TableInfo }) {
  if (t.snapshots.length === 0) return <p class="muted" id="no-snapshots">No snapshot yet: nothing was written to this table.</p>;
  return (
    <>
      <ol class="timeline" id="snapshots">
        {t.snapshots.map((s) => (
          <li key={s.snapshot_id} data-snapshot={s.snapshot_id}>
            <strong>{s.operation ?? 'snapshot'}</strong>{' '}
            {s.timestamp ? <time dateTime={s.timestamp}>{when(s.timestamp)}</time> : null}
            {s.snapshot_id === t.current_snapshot_id ? <> <span class="badge local">current</span></> : null}
            <br /><small class="muted">snapshot <code>{s.snapshot_id}</code>{s.parent_id ? <> after <code>{s.parent_id}</code></> : null}</small>
            {Object.keys(s.summary).length > 1 ? (
              <details>
                <summary>Summary</summary>
                <dl class="summary">
                  {Object.entries(s.summary).filter(([k]) => k !== 'operation').map(([k, v]) => <><dt key={`${k}-k`}>{k}</dt><dd key={`${k}-v`}>{v}</dd></>)}
                </dl>
              </details>
            ) : null}
          </li>
        ))}
      </ol>
      {t.snapshots_total > t.snapshots.length ? <p class="muted">The {t.snapshots.length} newest of {t.snapshots_total} snapshots are shown.</p> : null}
    </>
  );
}

export function CatalogTable({ ws, namespace, name }: { ws: string; namespace: string[]; name: string }) {
  const t = useLoad(() => ok(api.GET('/api/workspaces/{ws}/catalog/namespaces/{namespace}/tables/{name}', { params: { path: { ws, namespace: namespace.join(NS_SEP), name } } })), [ws, namespace.join(NS_SEP), name]);
  const full = [...namespace, name].join('.');
  const d = t.data;
  return (
    <>
      <Crumbs ws={ws} namespace={namespace} />
      <h1>Table <code>{full}</code></h1>
      {!d ? (t.error ? <Problem error={t.error} /> : <p aria-busy="true">Loading the table…</p>) : (
        <>
          <p>
            <a role="button" class="small" id="query-table" href={href.sql(ws, { sql: `SELECT * FROM ${icebergName(namespace, name)} LIMIT 100` })}>Query in the SQL console</a>
          </p>
          <dl class="facts" id="table-facts">
            <dt>Format version</dt><dd>{d.format_version ?? '—'}</dd>
            <dt>Last updated</dt><dd>{d.last_updated ? <time dateTime={d.last_updated}>{when(d.last_updated)}</time> : '—'}</dd>
            <dt>Current snapshot</dt><dd>{d.current_snapshot_id ? <code>{d.current_snapshot_id}</code> : 'none'}</dd>
            <dt>Location</dt><dd><code>{d.location ?? '—'}</code></dd>
          </dl>
          <section aria-labelledby="schema-title">
            <h2 id="schema-title">Schema</h2>
            <Columns caption={`Columns of ${full}`} columns={d.schema.columns} />
          </section>
          <section aria-labelledby="partitioning-title">
            <h2 id="partitioning-title">Partitioning</h2>
            {d.partition_spec.fields.length === 0 ? <p class="muted" id="unpartitioned">Not partitioned.</p> : (
              <Table caption={`Partition fields of ${full}`} headers={['Partition field', 'Source column', 'Transform']} id="partition-fields">
                {d.partition_spec.fields.map((f) => <tr key={f.name}><th scope="row">{f.name}</th><td>{f.source ?? `column ${f.source_id ?? '?'}`}</td><td><code>{f.transform}</code></td></tr>)}
              </Table>
            )}
            <h3>Sort order</h3>
            {d.sort_order.fields.length === 0 ? <p class="muted" id="unsorted">Not sorted.</p> : (
              <Table caption={`Sort order of ${full}`} headers={['Source column', 'Transform', 'Direction', 'Nulls']} id="sort-fields">
                {d.sort_order.fields.map((f, i) => <tr key={i}><th scope="row">{f.source ?? `column ${f.source_id ?? '?'}`}</th><td><code>{f.transform}</code></td><td>{f.direction}</td><td>{f.null_order}</td></tr>)}
              </Table>
            )}
          </section>
          <section aria-labelledby="snapshots-title">
            <h2 id="snapshots-title">Snapshots</h2>
            <Snapshots t={d} />
            {d.refs.length > 0 ? (
              <Table caption={`Branches and tags of ${full}`} headers={['Ref', 'Type', 'Snapshot']} id="refs">
                {d.refs.map((r) => <tr key={r.name}><th scope="row">{r.name}</th><td>{r.type}</td><td><code>{r.snapshot_id}</code></td></tr>)}
              </Table>
            ) : null}
          </section>
          <Properties caption={`Properties of ${full}`} properties={d.properties} />
        </>
      )}
    </>
  );
}
