// Pieces shared by the connections, policies and tags screens: the resource levels of the policy
// service (catalog > schema > table > column, with `*` and `?` wildcards), the principals a policy
// item names (users, groups, workspace roles), rows of key and value (connection settings and
// credentials, tag attributes), and how a screen tells that the policy service is off (its routes
// then answer as unknown routes).
import { ApiError } from '../../api/client';
import type { paths } from '../../api/schema';
import type { Body, WorkspaceRole } from '../../api/types';
import { Button } from '../../components/ui';

export type PolicyInput = paths['/api/workspaces/{ws}/policies']['post']['requestBody']['content']['application/json'];
export type Policy = Body<'/api/workspaces/{ws}/policies', 'get'>['policies'][number];
type Level = keyof PolicyInput['resources'];
/** The levels in the order the server requires them (each needs the one above). */
export const LEVELS: Level[] = ['catalog', 'schema', 'table', 'column'];
export type ResourceText = Record<Level, string>;
export const NO_RESOURCES: ResourceText = { catalog: '', schema: '', table: '', column: '' };

export const splitList = (s: string): string[] => s.split(',').map((x) => x.trim()).filter(Boolean);

/** The form's text per level as the API's resources: empty levels (and those not in `levels`) left out. */
export function toResources(t: ResourceText, levels: readonly Level[] = LEVELS): PolicyInput['resources'] {
  const out: PolicyInput['resources'] = {};
  for (const l of levels) { const v = splitList(t[l]); if (v.length) out[l] = v; }
  return out;
}

export function fromResources(r: Record<string, string[]>): ResourceText {
  const out = { ...NO_RESOURCES };
  for (const l of LEVELS) out[l] = (r[l] ?? []).join(', ');
  return out;
}

/** `catalog lake › schema sales, hr › table *` */
export const resourceSummary = (r: Record<string, string[]>): string =>
  LEVELS.filter((l) => r[l]?.length).map((l) => `${l} ${r[l].join(', ')}`).join(' › ');

/** An input per level (all four unless `levels` says fewer); `prefix` keeps ids unique when two forms are on one screen; `need` says what the policy kind requires. */
export function ResourceFields({ prefix, value, onChange, levels = LEVELS, need = 'A catalog is needed' }: {
  prefix: string; value: ResourceText; onChange(v: ResourceText): void; levels?: readonly Level[]; need?: string;
}) {
  return (
    <fieldset>
      <legend>Resources</legend>
      <div class="grid">
        {levels.map((l) => (
          <div key={l}>
            <label for={`${prefix}-${l}`}>{l[0].toUpperCase() + l.slice(1)}</label>
            <input id={`${prefix}-${l}`} maxLength={4000} spellcheck={false} autocomplete="off" value={value[l]} aria-describedby={`${prefix}-res-help`}
              onInput={(e) => onChange({ ...value, [l]: e.currentTarget.value })} />
          </div>
        ))}
      </div>
      <small id={`${prefix}-res-help`}>Values separated by commas; <code>*</code> and <code>?</code> are wildcards. {need}, and each level needs the one above.</small>
    </fieldset>
  );
}

export const toggle = <T,>(list: T[], v: T, on: boolean): T[] => (on ? [...list.filter((x) => x !== v), v] : list.filter((x) => x !== v));

const ROLES: WorkspaceRole[] = ['ws_viewer', 'ws_editor', 'ws_admin'];
/** Who a policy item names, as the form holds it: users and groups typed, separated by commas. */
export interface PrincipalText { users: string; groups: string; roles: string[] }
export const NO_PRINCIPALS: PrincipalText = { users: '', groups: '', roles: [] };
type Principals = { users?: string[]; groups?: string[]; roles?: string[] };
export const principalsFrom = (i: Principals): PrincipalText => ({ users: (i.users ?? []).join(', '), groups: (i.groups ?? []).join(', '), roles: i.roles ?? [] });
/** The API's principals: empty lists left out. */
export function principalsOut(p: PrincipalText): Principals {
  const out: Principals = {};
  const users = splitList(p.users); const groups = splitList(p.groups);
  if (users.length) out.users = users;
  if (groups.length) out.groups = groups;
  if (p.roles.length) out.roles = p.roles;
  return out;
}

/** Users and groups (suggested from the datalists `<listPrefix>-users` and `-groups`) and the workspace roles as checkboxes; ids start with `id`. */
export function PrincipalFields({ id, listPrefix, value, onChange }: { id: string; listPrefix: string; value: PrincipalText; onChange(patch: Partial<PrincipalText>): void }) {
  return (
    <>
      <div class="grid">
        <div><label for={`${id}-users`}>Users</label>
          <input id={`${id}-users`} maxLength={20000} spellcheck={false} autocomplete="off" list={`${listPrefix}-users`} placeholder="ana@example.com, …" value={value.users} onInput={(e) => onChange({ users: e.currentTarget.value })} /></div>
        <div><label for={`${id}-groups`}>Groups</label>
          <input id={`${id}-groups`} maxLength={20000} spellcheck={false} autocomplete="off" list={`${listPrefix}-groups`} value={value.groups} onInput={(e) => onChange({ groups: e.currentTarget.value })} /></div>
      </div>
      <fieldset class="inline-checks">
        <legend>Workspace roles</legend>
        {ROLES.map((r) => <label key={r}><input type="checkbox" checked={value.roles.includes(r)} onChange={(e) => onChange({ roles: toggle(value.roles, r, e.currentTarget.checked) })} /> {r}</label>)}
      </fieldset>
    </>
  );
}

export interface Pair { key: string; value: string }

/** Rows of key and value with Add and Remove; `secret` makes the values password inputs (write-only). */
export function PairRows({ prefix, legend, rows, onChange, secret, keyLabel = 'Key', valueLabel = 'Value', addLabel }: {
  prefix: string; legend: string; rows: Pair[]; onChange(rows: Pair[]): void; secret?: boolean; keyLabel?: string; valueLabel?: string; addLabel: string;
}) {
  const set = (i: number, k: keyof Pair) => (e: Event) => onChange(rows.map((r, j) => (j === i ? { ...r, [k]: (e.currentTarget as HTMLInputElement).value } : r)));
  return (
    <fieldset id={`${prefix}-rows`}>
      <legend>{legend}</legend>
      {rows.map((r, i) => (
        <div class="row" key={i}>
          <div class="grow"><label for={`${prefix}-key-${i}`}>{keyLabel} {i + 1}</label>
            <input id={`${prefix}-key-${i}`} maxLength={255} spellcheck={false} autocomplete="off" value={r.key} onInput={set(i, 'key')} /></div>
          <div class="grow"><label for={`${prefix}-value-${i}`}>{valueLabel} {i + 1}</label>
            {secret
              ? <input id={`${prefix}-value-${i}`} type="password" maxLength={65536} autocomplete="new-password" value={r.value} onInput={set(i, 'value')} />
              : <input id={`${prefix}-value-${i}`} maxLength={65536} spellcheck={false} autocomplete="off" value={r.value} onInput={set(i, 'value')} />}</div>
          <Button class="secondary outline small" aria-label={`Remove ${keyLabel.toLowerCase()} ${i + 1}${r.key ? ` (${r.key})` : ''}`} onClick={() => onChange(rows.filter((_, j) => j !== i))}>Remove</Button>
        </div>
      ))}
      <Button class="secondary small" onClick={() => onChange([...rows, { key: '', value: '' }])}>{addLabel}</Button>
    </fieldset>
  );
}

/** Policies and tags answer as an unknown route (404 "no route for ...") while policy_service.enabled is off. */
export const serviceOff = (err: unknown): boolean => err instanceof ApiError && err.status === 404 && err.message.startsWith('no route for');

export function ServiceOff() {
  return <p class="empty" id="service-off">The policy service is off on this server: an operator turns it on with <code>policy_service.enabled</code>.</p>;
}
