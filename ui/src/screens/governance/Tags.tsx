// Resource tags of the workspace's policy service (`#/w/<ws>/tags`, ws_admin as the routes
// require): each tag with its type, attributes and the resources it marks, a form to tag
// resources, and Delete after a confirmation. The API has no update: a changed tag is removed and
// added again. Engines download tags with the policies; the policy editor can fill its resources
// from a tag.
import { useState } from 'preact/hooks';
import { api, ok } from '../../api/client';
import { Button, FormError, Table, useBusy, when } from '../../components/ui';
import { may } from '../../lib/access';
import { clearMessages, say } from '../../lib/messages';
import { href } from '../../lib/router';
import { reportTo, useSession } from '../../lib/session';
import { useFocusAfter, useLoad } from '../../lib/useLoad';
import { NO_RESOURCES, PairRows, ResourceFields, resourceSummary, serviceOff, ServiceOff, toResources, type Pair, type ResourceText } from './fields';

const EMPTY: { type: string; attributes: Pair[]; resources: ResourceText } = { type: '', attributes: [], resources: NO_RESOURCES };

export function Tags({ ws }: { ws: string }) {
  const session = useSession();
  const admin = may(session.me, ws, 'ws_admin');
  const list = useLoad(async () => {
    if (!admin) return null;
    try { return await ok(api.GET('/api/workspaces/{ws}/tags', { params: { path: { ws } } })); } catch (e) { if (serviceOff(e)) return 'off' as const; throw e; }
  }, [ws]);
  const [f, setF] = useState(EMPTY);
  const [err, setErr] = useState('');
  const [busy, run] = useBusy();
  const focus = useFocusAfter();

  if (!admin) return <><h1>Tags</h1><p>This screen needs the ws_admin role in {ws}.</p></>;

  const create = async (ev: Event) => {
    ev.preventDefault();
    clearMessages(); setErr('');
    try {
      const t = await run(() => ok(api.POST('/api/workspaces/{ws}/tags', { params: { path: { ws } }, body: {
        type: f.type.trim(), resources: toResources(f.resources),
        attributes: Object.fromEntries(f.attributes.filter((a) => a.key.trim()).map((a) => [a.key.trim(), a.value])),
      } })));
      setF(EMPTY);
      await list.reload();
      say(`Tagged ${resourceSummary(t.resources)} as ${t.type}; tag version ${t.tag_version}.`);
    } catch (e) { reportTo(session, setErr)(e); }
  };
  const remove = async (id: string, label: string) => {
    if (!confirm(`Remove tag ${label}? Engines drop it at their next poll.`)) return;
    clearMessages();
    try {
      const r = await run(() => ok(api.DELETE('/api/workspaces/{ws}/tags/{id}', { params: { path: { ws, id } } })));
      await list.reload();
      say(`Removed tag ${label}; tag version ${r.tag_version}.`);
      focus('tags-title');
    } catch (e) { reportTo(session)(e); }
  };

  const d = list.data;
  return (
    <>
      <h1 id="tags-title" tabIndex={-1}>Tags</h1>
      <p class="lead">Classifications of resources (PII, finance, …) that engines download with the <a href={href.page(ws, 'policies')}>policies</a>.</p>
      {d === undefined ? (list.error ? null : <p aria-busy="true">Loading tags…</p>) : d === 'off' || d === null ? <ServiceOff /> : <>
        <p id="service-versions">Tag version {d.service.tag_version}.</p>
        {d.tags.length === 0 ? <p class="empty" id="no-tags">No tags yet.</p> : (
          <Table caption="Resource tags" headers={['Tag', 'Attributes', 'Resources', 'Created', 'Actions']} id="tags-table">
            {d.tags.map((t) => {
              const label = `${t.type} on ${resourceSummary(t.resources)}`;
              return (
                <tr key={t.id} data-tag={t.type}>
                  <th scope="row">{t.type}</th>
                  <td>{Object.entries(t.attributes).map(([k, v]) => `${k}=${v}`).join(', ') || <span class="muted">none</span>}</td>
                  <td>{resourceSummary(t.resources)}</td>
                  <td>{when(t.created_at)}</td>
                  <td class="actions"><Button class="danger small" busy={busy} aria-label={`Remove ${label}`} onClick={() => remove(t.id, label)}>Remove</Button></td>
                </tr>
              );
            })}
          </Table>
        )}
        <section aria-labelledby="h-new-tag">
          <h2 id="h-new-tag">Tag resources</h2>
          <form class="card" id="tag-form" onSubmit={create} aria-busy={busy ? 'true' : undefined}>
            <label for="tag-type">Type</label>
            <input id="tag-type" required maxLength={255} spellcheck={false} autocomplete="off" placeholder="PII" value={f.type} aria-describedby="tag-type-help" onInput={(e) => setF({ ...f, type: e.currentTarget.value })} />
            <small id="tag-type-help">Letters, digits, _, ., : and -.</small>
            <ResourceFields prefix="tag" value={f.resources} onChange={(resources) => setF({ ...f, resources })} />
            <PairRows prefix="attribute" legend="Attributes" rows={f.attributes} onChange={(attributes) => setF({ ...f, attributes })} keyLabel="Attribute" addLabel="Add an attribute" />
            <FormError text={err} />
            <Button type="submit" busy={busy}>Tag resources</Button>
          </form>
        </section>
      </>}
    </>
  );
}
