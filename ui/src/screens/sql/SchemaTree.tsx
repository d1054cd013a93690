// The workbench's tree beside the editor, as SQL Lab's: the catalog under `iceberg` (namespaces,
// their tables, a table's columns and types, read from the catalog's browse routes the Catalog
// screen uses, so only what the person may read is listed) and the scratch tables of the
// workspace's embedded engine (read through the query API from information_schema.columns, as any
// query, when the section is opened). Clicking a name inserts it, qualified and quoted where
// needed (lib/sqlNames.ts), at the editor's cursor. An off catalog or engine says so in place.
import { useState } from 'preact/hooks';
import { api, ok, errorText } from '../../api/client';
import { Button } from '../../components/ui';
import { NS_SEP } from '../../lib/router';
import { icebergName, ident, scratchName } from '../../lib/sqlNames';
import { useLoad } from '../../lib/useLoad';
import { runToEnd, type ScratchColumn } from './scratch';

const PAGE = 200;

function Column({ name, type, onInsert }: { name: string; type: string; onInsert(text: string): void }) {
  return (
    <li class="tree-column">
      <button type="button" class="tree-name" title={`Insert ${ident(name)}`} onClick={() => onInsert(ident(name))}>{name}</button> <code class="tree-type">{type}</code>
    </li>
  );
}

function IcebergTable({ ws, namespace, name, onInsert }: { ws: string; namespace: string[]; name: string; onInsert(text: string): void }) {
  const [open, setOpen] = useState(false);
  const full = icebergName(namespace, name);
  return (
    <li class="tree-table" data-table={full}>
      <button type="button" class="tree-toggle" aria-expanded={open ? 'true' : 'false'} aria-label={`Columns of ${full}`} onClick={() => setOpen(!open)}>{open ? '▾' : '▸'}</button>
      <button type="button" class="tree-name" title={`Insert ${full}`} onClick={() => onInsert(full)}>{name}</button>
      {open ? <TableColumns ws={ws} namespace={namespace} name={name} onInsert={onInsert} /> : null}
    </li>
  );
}

function TableColumns({ ws, namespace, name, onInsert }: { ws: string; namespace: string[]; name: string; onInsert(text: string): void }) {
  const t = useLoad(() => ok(api.GET('/api/workspaces/{ws}/catalog/namespaces/{namespace}/tables/{name}', { params: { path: { ws, namespace: namespace.join(NS_SEP), name } } })), [ws, namespace.join(NS_SEP), name]);
  if (!t.data) return t.error ? <p class="error-text small-text">{errorText(t.error)}</p> : <p aria-busy="true" class="small-text">Loading columns…</p>;
  return <ul>{t.data.schema.columns.map((c) => <Column key={c.name} name={c.name} type={c.type} onInsert={onInsert} />)}</ul>;
}

function Namespace({ ws, namespace, onInsert }: { ws: string; namespace: string[]; onInsert(text: string): void }) {
  const [open, setOpen] = useState(false);
  const label = namespace.join('.');
  return (
    <li class="tree-namespace" data-namespace={label}>
      <button type="button" class="tree-toggle" aria-expanded={open ? 'true' : 'false'} aria-label={`Tables of ${label}`} onClick={() => setOpen(!open)}>{open ? '▾' : '▸'}</button>
      <button type="button" class="tree-name" title={`Insert ${icebergName(namespace)}`} onClick={() => onInsert(icebergName(namespace))}>{namespace[namespace.length - 1]}</button>
      {open ? <NamespaceBody ws={ws} namespace={namespace} onInsert={onInsert} /> : null}
    </li>
  );
}

function NamespaceBody({ ws, namespace, onInsert }: { ws: string; namespace: string[]; onInsert(text: string): void }) {
  const path = { ws, namespace: namespace.join(NS_SEP) };
  const tables = useLoad(async () => (await ok(api.GET('/api/workspaces/{ws}/catalog/namespaces/{namespace}/tables', { params: { path, query: { limit: PAGE } } }))).names, [ws, path.namespace]);
  return (
    <>
      <Namespaces ws={ws} parent={namespace} onInsert={onInsert} />
      {tables.data === undefined ? (tables.error ? null : <p aria-busy="true" class="small-text">Loading tables…</p>) : (
        <ul>{tables.data.map((n) => <IcebergTable key={n} ws={ws} namespace={namespace} name={n} onInsert={onInsert} />)}</ul>
      )}
    </>
  );
}

function Namespaces({ ws, parent, onInsert }: { ws: string; parent?: string[]; onInsert(text: string): void }) {
  const list = useLoad(async () => (await ok(api.GET('/api/workspaces/{ws}/catalog/namespaces', { params: { path: { ws }, query: { parent: parent?.join(NS_SEP), limit: PAGE } } }))).namespaces, [ws, parent?.join(NS_SEP)]);
  if (list.data === undefined) {
    if (!list.error) return <p aria-busy="true" class="small-text">Loading namespaces…</p>;
    return parent ? null : <p class="empty small-text" id="catalog-off">{errorText(list.error)}</p>;
  }
  if (list.data.length === 0) return parent ? null : <p class="empty small-text" id="no-catalog-namespaces">No namespaces in the catalog yet.</p>;
  return <ul>{list.data.map((n) => <Namespace key={n.name} ws={ws} namespace={n.namespace} onInsert={onInsert} />)}</ul>;
}

function Scratch({ ws, onInsert }: { ws: string; onInsert(text: string): void }) {
  const [tick, setTick] = useState(0);
  const tables = useLoad(async () => {
    const cols = await runToEnd(ws);
    const byTable = new Map<string, ScratchColumn[]>();
    for (const c of cols) byTable.set(`${c.schema}\u0000${c.table}`, [...(byTable.get(`${c.schema}\u0000${c.table}`) ?? []), c]);
    return [...byTable.values()];
  }, [ws, tick]);
  const [open, setOpen] = useState<string | null>(null);
  return (
    <>
      <Button class="secondary outline small" onClick={() => setTick(tick + 1)}>Refresh</Button>
      {tables.data === undefined ? (tables.error ? <p class="empty small-text" id="scratch-off">{errorText(tables.error)}</p> : <p aria-busy="true" class="small-text">Reading the scratch tables…</p>)
        : tables.data.length === 0 ? <p class="empty small-text" id="no-scratch">No scratch tables yet: <code>CREATE TABLE t AS …</code> on the embedded engine makes one.</p> : (
          <ul>
            {tables.data.map((cols) => {
              const name = scratchName(cols[0].schema, cols[0].table);
              return (
                <li key={name} class="tree-table" data-table={name}>
                  <button type="button" class="tree-toggle" aria-expanded={open === name ? 'true' : 'false'} aria-label={`Columns of ${name}`} onClick={() => setOpen(open === name ? null : name)}>{open === name ? '▾' : '▸'}</button>
                  <button type="button" class="tree-name" title={`Insert ${name}`} onClick={() => onInsert(name)}>{cols[0].schema === 'main' ? cols[0].table : `${cols[0].schema}.${cols[0].table}`}</button>
                  {open === name ? <ul>{cols.map((c) => <Column key={c.column} name={c.column} type={c.type} onInsert={onInsert} />)}</ul> : null}
                </li>
              );
            })}
          </ul>
        )}
    </>
  );
}

export function SchemaTree({ ws, onInsert }: { ws: string; onInsert(text: string): void }) {
  const [scratch, setScratch] = useState(false);
  return (
    <nav class="schema-tree" aria-labelledby="schema-tree-title">
      <h2 id="schema-tree-title">Tables</h2>
      <p class="hint small-text">Click a name to insert it at the cursor.</p>
      <details open>
        <summary><code>iceberg</code> catalog</summary>
        <Namespaces ws={ws} onInsert={onInsert} />
      </details>
      <details onToggle={(e) => setScratch((e.currentTarget as HTMLDetailsElement).open)} id="scratch-tables">
        <summary>Scratch tables <small class="muted">(embedded engine)</small></summary>
        {scratch ? <Scratch ws={ws} onInsert={onInsert} /> : null}
      </details>
    </nav>
  );
}
