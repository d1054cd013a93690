// The catalog browser (`#/w/<ws>/catalog?ns=<levels joined by %1F>`): a namespace tree on the
// left (each namespace on the path to the chosen one opens to show its children), and the chosen
// namespace's properties, tables and views on the right. Everything comes from the read-only
// session routes (/api/workspaces/{ws}/catalog/...), which leave out what a policy hides from the
// person, so nothing hidden is ever offered. Lists come by pages, with a button for the next one.
import { useState } from 'preact/hooks';
import { api, ok } from '../../api/client';
import { Button, Table, useBusy } from '../../components/ui';
import { href, NS_SEP } from '../../lib/router';
import { reportTo, useSession } from '../../lib/session';
import { useLoad } from '../../lib/useLoad';
import { Problem } from './parts';

const PAGE = 100;
const same = (a: string[], b: string[]) => a.length === b.length && a.every((x, i) => x === b[i]);
const within = (path: string[], ns: string[]) => ns.length <= path.length && ns.every((x, i) => x === path[i]);

/** A list that grows by pages: the first from `load`, the next ones on demand. */
function usePages<T>(load: (token?: string) => Promise<{ items: T[]; next: string | null }>, deps: unknown[]) {
  const session = useSession();
  const [more, setMore] = useState<{ items: T[]; next: string | null } | null>(null);
  const first = useLoad(async () => { setMore(null); return load(); }, deps);
  const [busy, run] = useBusy();
  const items = [...(first.data?.items ?? []), ...(more?.items ?? [])];
  const next = more ? more.next : first.data?.next ?? null;
  const loadMore = () => run(async () => {
    if (!next) return;
    try {
      const page = await load(next);
      setMore((m) => ({ items: [...(m?.items ?? []), ...page.items], next: page.next }));
    } catch (err) { reportTo(session)(err); }
  });
  return { loaded: first.data !== undefined, error: first.error, items, next, busy, loadMore };
}

function TreeLevel({ ws, parent, selected }: { ws: string; parent?: string[]; selected: string[] }) {
  const list = usePages(async (token) => {
    const d = await ok(api.GET('/api/workspaces/{ws}/catalog/namespaces', { params: { path: { ws }, query: { parent: parent?.join(NS_SEP), page_token: token, limit: PAGE } } }));
    return { items: d.namespaces, next: d.next_page_token };
  }, [ws, parent?.join(NS_SEP)]);
  if (!list.loaded) return list.error ? <Problem error={list.error} /> : <p aria-busy="true">Loading namespaces…</p>;
  if (list.items.length === 0) return parent ? null : <p class="empty" id="no-namespaces">No namespace in this warehouse yet. Engines create them through the catalog.</p>;
  return (
    <ul>
      {list.items.map((n) => {
        const open = within(selected, n.namespace);
        return (
          <li key={n.name} data-namespace={n.name}>
            <a href={href.catalog(ws, n.namespace)} aria-current={same(selected, n.namespace) ? 'page' : undefined}>{n.namespace[n.namespace.length - 1]}</a>
            {open ? <TreeLevel ws={ws} parent={n.namespace} selected={selected} /> : null}
          </li>
        );
      })}
      {list.next ? <li><Button class="secondary outline small" busy={list.busy} onClick={() => void list.loadMore()}>More namespaces</Button></li> : null}
    </ul>
  );
}

function Members({ ws, namespace, kind }: { ws: string; namespace: string[]; kind: 'tables' | 'views' }) {
  const list = usePages(async (token) => {
    const path = { ws, namespace: namespace.join(NS_SEP) };
    const query = { page_token: token, limit: PAGE };
    const d = kind === 'tables'
      ? await ok(api.GET('/api/workspaces/{ws}/catalog/namespaces/{namespace}/tables', { params: { path, query } }))
      : await ok(api.GET('/api/workspaces/{ws}/catalog/namespaces/{namespace}/views', { params: { path, query } }));
    return { items: d.names, next: d.next_page_token };
  }, [ws, namespace.join(NS_SEP), kind]);
  const title = kind === 'tables' ? 'Tables' : 'Views';
  return (
    <section aria-labelledby={`${kind}-title`}>
      <h3 id={`${kind}-title`}>{title}</h3>
      {!list.loaded ? (list.error ? <Problem error={list.error} /> : <p aria-busy="true">Loading {kind}…</p>)
        : list.items.length === 0 ? <p class="muted" id={`no-${kind}`}>No {kind} in this namespace.</p> : (
          <ul id={`${kind}-list`}>
            {list.items.map((name) => (
              <li key={name}><a href={kind === 'tables' ? href.catalogTable(ws, namespace, name) : href.catalogView(ws, namespace, name)}>{name}</a></li>
            ))}
          </ul>
        )}
      {list.next ? <Button class="secondary outline small" busy={list.busy} onClick={() => void list.loadMore()}>More {kind}</Button> : null}
    </section>
  );
}

function NamespacePanel({ ws, namespace }: { ws: string; namespace: string[] }) {
  const ns = useLoad(() => ok(api.GET('/api/workspaces/{ws}/catalog/namespaces/{namespace}', { params: { path: { ws, namespace: namespace.join(NS_SEP) } } })), [ws, namespace.join(NS_SEP)]);
  if (!ns.data) return ns.error ? <Problem error={ns.error} /> : <p aria-busy="true">Loading the namespace…</p>;
  const props = Object.entries(ns.data.properties);
  return (
    <>
      <h2 id="namespace-title">Namespace <code>{ns.data.name}</code></h2>
      <Members ws={ws} namespace={namespace} kind="tables" />
      <Members ws={ws} namespace={namespace} kind="views" />
      <section aria-labelledby="ns-props-title">
        <h3 id="ns-props-title">Properties</h3>
        {props.length === 0 ? <p class="muted">No properties.</p> : (
          <Table caption={`Properties of namespace ${ns.data.name}`} headers={['Property', 'Value']} id="namespace-properties">
            {props.map(([k, v]) => <tr key={k}><th scope="row"><code>{k}</code></th><td>{v}</td></tr>)}
          </Table>
        )}
      </section>
    </>
  );
}

export function Catalog({ ws, query }: { ws: string; query: URLSearchParams }) {
  const raw = query.get('ns');
  const selected = raw ? raw.split(NS_SEP) : [];
  return (
    <>
      <h1>Catalog</h1>
      <p class="lead">The Iceberg tables and views of this workspace's warehouse. Only what your role and the workspace's policies let you read is shown.</p>
      <div class="catalog-layout">
        <nav aria-label="Namespaces" class="catalog-tree">
          <h2 class="visually-hidden">Namespaces</h2>
          <TreeLevel ws={ws} selected={selected} />
        </nav>
        <div class="catalog-main">
          {selected.length === 0 ? <p class="muted" id="choose-namespace">Choose a namespace to see its tables and views.</p>
            : <NamespacePanel key={raw} ws={ws} namespace={selected} />}
        </div>
      </div>
    </>
  );
}
