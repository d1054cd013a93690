// Pieces the catalog's table and view pages share: the way back to the namespace, the columns of
// a schema, the properties, and an error where the load failed (with the server's message).
import { errorText } from '../../api/client';
import { Table } from '../../components/ui';
import { href } from '../../lib/router';

export interface Column { id: number | null; name: string; type: string; required: boolean; doc: string | null }

export function Problem({ error }: { error: unknown }) {
  return <p class="error-text" role="alert" id="catalog-problem">{errorText(error)}</p>;
}

export function Crumbs({ ws, namespace }: { ws: string; namespace: string[] }) {
  return (
    <nav aria-label="Breadcrumb" class="crumbs">
      <a href={href.catalog(ws)}>Catalog</a> / <a href={href.catalog(ws, namespace)}>{namespace.join('.')}</a>
    </nav>
  );
}

export function Columns({ caption, columns }: { caption: string; columns: Column[] }) {
  if (columns.length === 0) return <p class="muted">No columns.</p>;
  return (
    <Table caption={caption} headers={['Column', 'Type', 'Nullable', 'Description']} id="columns">
      {columns.map((c) => (
        <tr key={c.id ?? c.name} data-column={c.name}>
          <th scope="row">{c.name}</th><td><code>{c.type}</code></td><td>{c.required ? 'no' : 'yes'}</td><td>{c.doc ?? ''}</td>
        </tr>
      ))}
    </Table>
  );
}

export function Properties({ caption, properties }: { caption: string; properties: Record<string, string> }) {
  const entries = Object.entries(properties);
  return (
    <section aria-labelledby="properties-title">
      <h2 id="properties-title">Properties</h2>
      {entries.length === 0 ? <p class="muted">No properties.</p> : (
        <Table caption={caption} headers={['Property', 'Value']} id="properties">
          {entries.map(([k, v]) => <tr key={k}><th scope="row"><code>{k}</code></th><td>{v}</td></tr>)}
        </Table>
      )}
    </section>
  );
}
