// The policy editor (ws_admin): a name, the kind of policy (chosen when creating: access, column
// mask or row filter), resources per level (typed, or filled from a tagged resource; down to the
// column for a mask, to the table for a row filter), and the kind's items (PolicyItems.tsx), each
// naming principals (users, groups of the workspace, workspace roles): allow and deny items with
// access types, mask items with a mask type (and an expression for CUSTOM), row filter items with
// a filter expression. Create posts it; Edit loads a policy and Save replaces it (PUT). The server
// validates; its message is shown in the form, and an item it names (`allow[0] needs users, groups
// or roles`, `masks[0]: a CUSTOM mask needs an expression`) is marked where it is. Users and
// groups are typed, with the workspace's members suggested (a group of the identity provider may
// have no role yet).
import { useState } from 'preact/hooks';
import { api, ok } from '../../api/client';
import type { Body } from '../../api/types';
import { Button, FormError, useBusy } from '../../components/ui';
import { clearMessages } from '../../lib/messages';
import { reportTo, useSession } from '../../lib/session';
import { fromResources, LEVELS, NO_RESOURCES, ResourceFields, resourceSummary, toResources, type Policy, type PolicyInput, type ResourceText } from './fields';
import { ItemFields, itemsOf, itemsOut, KIND_OF, kindOf, LIST_OF, newItem, type Effect, type Item, type Kind } from './PolicyItems';

export type Tag = Body<'/api/workspaces/{ws}/tags', 'get'>['tags'][number];

const KINDS: Record<Kind, { label: string; levels: typeof LEVELS; need: string; add: [Effect, string][] }> = {
  access: { label: 'Access policy', levels: LEVELS, need: 'A catalog is needed', add: [['allow', 'Add an allow item'], ['deny', 'Add a deny item']] },
  mask: { label: 'Masking policy', levels: LEVELS, need: 'A column mask names every level down to the column', add: [['mask', 'Add a mask item']] },
  filter: { label: 'Row filter policy', levels: LEVELS.slice(0, 3), need: 'A row filter names every level down to the table (no column)', add: [['filter', 'Add a row filter item']] },
};

interface Form { name: string; description: string; enabled: boolean; kind: Kind; resources: ResourceText; items: Item[] }
// A new policy holds a first item of each kind; the kind chosen decides which are shown and sent.
const EMPTY: Form = { name: '', description: '', enabled: true, kind: 'access', resources: NO_RESOURCES, items: [newItem('allow'), newItem('mask'), newItem('filter')] };
const formOf = (p: Policy): Form => ({ name: p.name, description: p.description, enabled: p.is_enabled, kind: kindOf(p), resources: fromResources(p.resources), items: itemsOf(p) });

export function PolicyForm({ ws, editing, tags, groups, users, onSaved, onCancel }: {
  ws: string; editing: Policy | null; tags: Tag[]; groups: string[]; users: string[]; onSaved(name: string, created: boolean): Promise<void>; onCancel(): void;
}) {
  const session = useSession();
  const [f, setF] = useState<Form>(() => (editing ? formOf(editing) : EMPTY));
  const [err, setErr] = useState('');
  const [busy, run] = useBusy();
  // The item the server's message names (`masks[0]: ...`, or `invalid body at row_filters.0.filter: ...`): its list and its place in it.
  const flagged = /^(?:invalid body at )?(allow|deny|masks|row_filters)[[.](\d+)/.exec(err.toLowerCase());
  const kind = KINDS[f.kind];
  const setItem = (n: number, patch: Partial<Item>) => setF({ ...f, items: f.items.map((it, j) => (j === n ? { ...it, ...patch } : it)) });

  const save = async (ev: Event) => {
    ev.preventDefault();
    clearMessages(); setErr('');
    const body: PolicyInput = {
      name: f.name.trim(), description: f.description, is_enabled: f.enabled, resources: toResources(f.resources, kind.levels), ...itemsOut(f.items, f.kind),
    };
    try {
      const p = await run(() => (editing
        ? ok(api.PUT('/api/workspaces/{ws}/policies/{id}', { params: { path: { ws, id: editing.id } }, body }))
        : ok(api.POST('/api/workspaces/{ws}/policies', { params: { path: { ws } }, body }))));
      if (!editing) setF({ ...EMPTY, kind: f.kind });
      await onSaved(p.name, !editing);
    } catch (e) { reportTo(session, setErr)(e); }
  };

  // Numbered per list, as the server numbers them (allow[0] is "Allow item 1").
  const seq: Record<Effect, number> = { allow: 0, deny: 0, mask: 0, filter: 0 };
  return (
    <section aria-labelledby="h-policy-form">
      <h2 id="h-policy-form">{editing ? `Edit policy ${editing.name}` : 'Create a policy'}</h2>
      <form class="card" id="policy-form" onSubmit={save} aria-busy={busy ? 'true' : undefined}>
        {editing ? <p id="policy-kind">Kind: <strong>{kind.label.toLowerCase()}</strong> (a policy keeps its kind).</p> : (
          <fieldset class="inline-checks" id="policy-kind">
            <legend>Kind</legend>
            {(Object.keys(KINDS) as Kind[]).map((k) => (
              <label key={k}><input type="radio" name="policy-kind" value={k} checked={f.kind === k} onChange={() => setF({ ...f, kind: k })} /> {KINDS[k].label}</label>
            ))}
          </fieldset>
        )}
        <div class="grid">
          <div><label for="policy-name">Name</label>
            <input id="policy-name" required maxLength={255} autocomplete="off" value={f.name} onInput={(e) => setF({ ...f, name: e.currentTarget.value })} /></div>
          <div><label for="policy-description">Description</label>
            <input id="policy-description" maxLength={4000} value={f.description} onInput={(e) => setF({ ...f, description: e.currentTarget.value })} /></div>
        </div>
        <label class="check"><input type="checkbox" id="policy-enabled" checked={f.enabled} onChange={(e) => setF({ ...f, enabled: e.currentTarget.checked })} /> Enabled (engines enforce it)</label>
        {tags.length ? (
          <>
            <label for="policy-from-tag">Fill resources from a tagged resource</label>
            <select id="policy-from-tag" value="" onChange={(e) => { const t = tags.find((x) => x.id === e.currentTarget.value); if (t) setF({ ...f, resources: fromResources(t.resources) }); }}>
              <option value="">Choose a tag…</option>
              {tags.map((t) => <option key={t.id} value={t.id}>{t.type}: {resourceSummary(t.resources)}</option>)}
            </select>
          </>
        ) : null}
        <ResourceFields prefix="policy" value={f.resources} levels={kind.levels} need={kind.need} onChange={(resources) => setF({ ...f, resources })} />
        {/* Suggestions: the groups with a role in the workspace and its users with a direct role. */}
        <datalist id="policy-groups">{groups.map((g) => <option key={g} value={g} />)}</datalist>
        <datalist id="policy-users">{users.map((u) => <option key={u} value={u} />)}</datalist>
        {f.items.map((it, n) => {
          if (KIND_OF[it.effect] !== f.kind) return null;
          const k = seq[it.effect]++;
          const named = flagged !== null && flagged[1] === LIST_OF[it.effect] && Number(flagged[2]) === k;
          return <ItemFields key={n} item={it} n={n} k={k} error={named ? err : null} onChange={(patch) => setItem(n, patch)}
            onRemove={() => setF({ ...f, items: f.items.filter((_, j) => j !== n) })} />;
        })}
        <div class="actions">
          {kind.add.map(([effect, label]) => <Button key={effect} class="secondary small" onClick={() => setF({ ...f, items: [...f.items, newItem(effect)] })}>{label}</Button>)}
        </div>
        <FormError text={err} />
        <div class="actions">
          <Button type="submit" busy={busy}>{editing ? 'Save policy' : 'Create policy'}</Button>
          {editing ? <Button class="secondary" onClick={onCancel}>Cancel</Button> : null}
        </div>
      </form>
    </section>
  );
}
