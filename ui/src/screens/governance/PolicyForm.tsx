// The policy editor (ws_admin): a name, resources per level (typed, or filled from a tagged
// resource), and allow and deny items, each naming principals (users, groups of the workspace,
// workspace roles) and the access types they get. Create posts it; Edit loads a policy and Save
// replaces it (PUT). The server validates; its message is shown in the form, and an item it names
// (`allow[0] needs users, groups or roles`) is marked where it is. Users and groups are typed,
// with the workspace's members suggested (a group of the identity provider may have no role yet).
import { useState } from 'preact/hooks';
import { api, ok } from '../../api/client';
import type { Body, WorkspaceRole } from '../../api/types';
import { Button, FormError, useBusy } from '../../components/ui';
import { clearMessages } from '../../lib/messages';
import { reportTo, useSession } from '../../lib/session';
import { fromResources, NO_RESOURCES, ResourceFields, resourceSummary, splitList, toResources, type PolicyInput, type ResourceText } from './fields';

export type Policy = Body<'/api/workspaces/{ws}/policies', 'get'>['policies'][number];
export type Tag = Body<'/api/workspaces/{ws}/tags', 'get'>['tags'][number];
type ItemIn = NonNullable<PolicyInput['allow']>[number];
type Access = ItemIn['accesses'][number];
type Effect = 'allow' | 'deny';

/** Every access type of the service definition: a type the server adds or drops breaks this build. */
const ACCESS_HELP: Record<Access, string> = {
  select: 'read rows', insert: 'add rows', delete: 'remove rows', update: 'change rows', ownership: 'take ownership', create: 'create objects',
  drop: 'drop objects', alter: 'alter objects', show: 'list objects', impersonate: 'act as another user', execute: 'run procedures', all: 'every access',
};
const ACCESSES = Object.keys(ACCESS_HELP) as Access[];
const ROLES: WorkspaceRole[] = ['ws_viewer', 'ws_editor', 'ws_admin'];

interface Item { effect: Effect; users: string; groups: string; roles: string[]; accesses: Access[]; delegate: boolean }
const newItem = (effect: Effect): Item => ({ effect, users: '', groups: '', roles: [], accesses: [], delegate: false });
const itemFrom = (effect: Effect, i: Policy['allow'][number]): Item => ({
  effect, users: (i.users ?? []).join(', '), groups: (i.groups ?? []).join(', '), roles: i.roles ?? [],
  accesses: i.accesses.filter((a): a is Access => a in ACCESS_HELP), delegate: i.delegate_admin ?? false,
});
function itemOut(i: Item): ItemIn {
  const out: ItemIn = { accesses: i.accesses };
  const users = splitList(i.users); const groups = splitList(i.groups);
  if (users.length) out.users = users;
  if (groups.length) out.groups = groups;
  if (i.roles.length) out.roles = i.roles;
  if (i.delegate) out.delegate_admin = true;
  return out;
}
const toggle = <T,>(list: T[], v: T, on: boolean): T[] => (on ? [...list.filter((x) => x !== v), v] : list.filter((x) => x !== v));

interface Form { name: string; description: string; enabled: boolean; resources: ResourceText; items: Item[] }
const EMPTY: Form = { name: '', description: '', enabled: true, resources: NO_RESOURCES, items: [newItem('allow')] };
const formOf = (p: Policy): Form => ({
  name: p.name, description: p.description, enabled: p.is_enabled, resources: fromResources(p.resources),
  items: [...p.allow.map((i) => itemFrom('allow', i)), ...p.deny.map((i) => itemFrom('deny', i))],
});

export function PolicyForm({ ws, editing, tags, groups, users, onSaved, onCancel }: {
  ws: string; editing: Policy | null; tags: Tag[]; groups: string[]; users: string[]; onSaved(name: string, created: boolean): Promise<void>; onCancel(): void;
}) {
  const session = useSession();
  const [f, setF] = useState<Form>(() => (editing ? formOf(editing) : EMPTY));
  const [err, setErr] = useState('');
  const [busy, run] = useBusy();
  // The item the server's message names, as "allow-0".
  const flagged = /^(allow|deny)\[(\d+)\]/.exec(err.toLowerCase());
  const setItem = (n: number, patch: Partial<Item>) => setF({ ...f, items: f.items.map((it, j) => (j === n ? { ...it, ...patch } : it)) });

  const save = async (ev: Event) => {
    ev.preventDefault();
    clearMessages(); setErr('');
    const body: PolicyInput = {
      name: f.name.trim(), description: f.description, is_enabled: f.enabled, resources: toResources(f.resources),
      allow: f.items.filter((i) => i.effect === 'allow').map(itemOut), deny: f.items.filter((i) => i.effect === 'deny').map(itemOut),
    };
    try {
      const p = await run(() => (editing
        ? ok(api.PUT('/api/workspaces/{ws}/policies/{id}', { params: { path: { ws, id: editing.id } }, body }))
        : ok(api.POST('/api/workspaces/{ws}/policies', { params: { path: { ws } }, body }))));
      if (!editing) setF(EMPTY);
      await onSaved(p.name, !editing);
    } catch (e) { reportTo(session, setErr)(e); }
  };

  // Numbered per effect, as the server numbers them (allow[0] is "Allow item 1").
  const seq = { allow: 0, deny: 0 };
  return (
    <section aria-labelledby="h-policy-form">
      <h2 id="h-policy-form">{editing ? `Edit policy ${editing.name}` : 'Create a policy'}</h2>
      <form class="card" id="policy-form" onSubmit={save} aria-busy={busy ? 'true' : undefined}>
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
        <ResourceFields prefix="policy" value={f.resources} onChange={(resources) => setF({ ...f, resources })} />
        {/* Suggestions: the groups with a role in the workspace and its users with a direct role. */}
        <datalist id="policy-groups">{groups.map((g) => <option key={g} value={g} />)}</datalist>
        <datalist id="policy-users">{users.map((u) => <option key={u} value={u} />)}</datalist>
        {f.items.map((it, n) => {
          const k = seq[it.effect]++;
          const id = `item-${n}`;
          const bad = flagged !== null && flagged[1] === it.effect && Number(flagged[2]) === k;
          const title = `${it.effect === 'allow' ? 'Allow' : 'Deny'} item ${k + 1}`;
          return (
            <fieldset key={n} class={`policy-item ${it.effect}`} id={`${it.effect}-item-${k + 1}`} aria-invalid={bad ? 'true' : undefined} aria-describedby={bad ? `${id}-error` : undefined}>
              <legend>{title}</legend>
              {bad ? <p class="error-text" id={`${id}-error`}>{err}</p> : null}
              <div class="grid">
                <div><label for={`${id}-users`}>Users</label>
                  <input id={`${id}-users`} maxLength={20000} spellcheck={false} autocomplete="off" list="policy-users" placeholder="ana@example.com, …" value={it.users} onInput={(e) => setItem(n, { users: e.currentTarget.value })} /></div>
                <div><label for={`${id}-groups`}>Groups</label>
                  <input id={`${id}-groups`} maxLength={20000} spellcheck={false} autocomplete="off" list="policy-groups" value={it.groups} onInput={(e) => setItem(n, { groups: e.currentTarget.value })} /></div>
              </div>
              <fieldset class="inline-checks">
                <legend>Workspace roles</legend>
                {ROLES.map((r) => <label key={r}><input type="checkbox" checked={it.roles.includes(r)} onChange={(e) => setItem(n, { roles: toggle(it.roles, r, e.currentTarget.checked) })} /> {r}</label>)}
              </fieldset>
              <fieldset class="inline-checks">
                <legend>Access types</legend>
                {ACCESSES.map((a) => <label key={a} title={ACCESS_HELP[a]}><input type="checkbox" checked={it.accesses.includes(a)} onChange={(e) => setItem(n, { accesses: toggle(it.accesses, a, e.currentTarget.checked) })} /> {a}</label>)}
              </fieldset>
              <div class="actions">
                <label class="check"><input type="checkbox" checked={it.delegate} onChange={(e) => setItem(n, { delegate: e.currentTarget.checked })} /> May administer what this item grants (delegate admin)</label>
                <Button class="secondary outline small" aria-label={`Remove ${title.toLowerCase()}`} onClick={() => setF({ ...f, items: f.items.filter((_, j) => j !== n) })}>Remove</Button>
              </div>
            </fieldset>
          );
        })}
        <div class="actions">
          <Button class="secondary small" onClick={() => setF({ ...f, items: [...f.items, newItem('allow')] })}>Add an allow item</Button>
          <Button class="secondary small" onClick={() => setF({ ...f, items: [...f.items, newItem('deny')] })}>Add a deny item</Button>
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
