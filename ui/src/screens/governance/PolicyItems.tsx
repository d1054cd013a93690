// The items of the policy editor, one fieldset each: who (PrincipalFields) and what. An access
// policy's allow and deny items name access types (and delegate admin); a column mask's items name
// a mask type, with an expression for CUSTOM only; a row filter's items name a filter expression.
// Each item is numbered per list as the server numbers them (allow[0] is "Allow item 1",
// masks[0] "Mask item 1", row_filters[0] "Row filter item 1"), so a message naming one marks it.
import { Button } from '../../components/ui';
import { NO_PRINCIPALS, PrincipalFields, principalsFrom, principalsOut, toggle, type Policy, type PolicyInput, type PrincipalText } from './fields';

type AccessIn = NonNullable<PolicyInput['allow']>[number];
type MaskIn = NonNullable<PolicyInput['masks']>[number];
type FilterIn = NonNullable<PolicyInput['row_filters']>[number];
type Access = AccessIn['accesses'][number];
type MaskType = MaskIn['type'];

/** Every access type of the service definition: a type the server adds or drops breaks this build. */
const ACCESS_HELP: Record<Access, string> = {
  select: 'read rows', insert: 'add rows', delete: 'remove rows', update: 'change rows', ownership: 'take ownership', create: 'create objects',
  drop: 'drop objects', alter: 'alter objects', show: 'list objects', impersonate: 'act as another user', execute: 'run procedures', all: 'every access',
};
const ACCESSES = Object.keys(ACCESS_HELP) as Access[];
/** Every mask type the API accepts, likewise: a type the server adds or drops breaks this build. */
const MASK_HELP: Record<MaskType, string> = {
  MASK: 'letters to x or X, digits to 0', MASK_SHOW_LAST_4: 'only the last 4 characters shown', MASK_SHOW_FIRST_4: 'only the first 4 characters shown',
  MASK_HASH: 'SHA-256 hash', MASK_NULL: 'null', MASK_NONE: 'unmasked', MASK_DATE_SHOW_YEAR: 'a date truncated to its year', CUSTOM: 'a SQL expression of yours',
};
const MASK_TYPES = Object.keys(MASK_HELP) as MaskType[];
/** The mask types that take an expression. */
const takesExpression = (t: MaskType) => t === 'CUSTOM';

/** The policy kinds: which list of items a policy holds (the server takes one kind a policy). */
export type Kind = 'access' | 'mask' | 'filter';
export type Effect = 'allow' | 'deny' | 'mask' | 'filter';
export const KIND_OF: Record<Effect, Kind> = { allow: 'access', deny: 'access', mask: 'mask', filter: 'filter' };
/** The body's list per effect, as the server names it in its messages. */
export const LIST_OF = { allow: 'allow', deny: 'deny', mask: 'masks', filter: 'row_filters' } as const satisfies Record<Effect, keyof PolicyInput>;
const TITLE: Record<Effect, string> = { allow: 'Allow item', deny: 'Deny item', mask: 'Mask item', filter: 'Row filter item' };
export const kindOf = (p: Policy): Kind => (p.masks.length ? 'mask' : p.row_filters.length ? 'filter' : 'access');

export interface Item extends PrincipalText { effect: Effect; accesses: Access[]; delegate: boolean; type: MaskType; expression: string; filter: string }
export const newItem = (effect: Effect): Item => ({ effect, ...NO_PRINCIPALS, accesses: [], delegate: false, type: 'MASK', expression: '', filter: '' });

/** A policy's items as the form holds them. */
export function itemsOf(p: Policy): Item[] {
  return [
    ...p.allow.map((i) => accessItem('allow', i)), ...p.deny.map((i) => accessItem('deny', i)),
    ...p.masks.map((m): Item => ({ ...newItem('mask'), ...principalsFrom(m), type: m.type, expression: m.expression ?? '' })),
    ...p.row_filters.map((r): Item => ({ ...newItem('filter'), ...principalsFrom(r), filter: r.filter })),
  ];
}
const accessItem = (effect: Effect, i: Policy['allow'][number]): Item => ({
  ...newItem(effect), ...principalsFrom(i), accesses: i.accesses.filter((a): a is Access => a in ACCESS_HELP), delegate: i.delegate_admin ?? false,
});

/** The body's item lists of one kind (the others left out). */
export function itemsOut(items: Item[], kind: Kind): Pick<PolicyInput, 'allow' | 'deny' | 'masks' | 'row_filters'> {
  const of = (e: Effect) => items.filter((i) => i.effect === e);
  if (kind === 'mask') {
    return { masks: of('mask').map((i): MaskIn => ({ ...principalsOut(i), type: i.type, ...(takesExpression(i.type) ? { expression: i.expression } : {}) })) };
  }
  if (kind === 'filter') return { row_filters: of('filter').map((i): FilterIn => ({ ...principalsOut(i), filter: i.filter })) };
  const access = (i: Item): AccessIn => ({ ...principalsOut(i), accesses: i.accesses, ...(i.delegate ? { delegate_admin: true } : {}) });
  return { allow: of('allow').map(access), deny: of('deny').map(access) };
}

/** One item: `n` its place in the form (ids), `k` its place in its list (title); `error` the server's message when it names this item. */
export function ItemFields({ item, n, k, error, onChange, onRemove }: {
  item: Item; n: number; k: number; error: string | null; onChange(patch: Partial<Item>): void; onRemove(): void;
}) {
  const id = `item-${n}`;
  const title = `${TITLE[item.effect]} ${k + 1}`;
  return (
    <fieldset class={`policy-item ${item.effect}`} id={`${item.effect}-item-${k + 1}`} aria-invalid={error ? 'true' : undefined} aria-describedby={error ? `${id}-error` : undefined}>
      <legend>{title}</legend>
      {error ? <p class="error-text" id={`${id}-error`}>{error}</p> : null}
      <PrincipalFields id={id} listPrefix="policy" value={item} onChange={onChange} />
      {item.effect === 'mask' ? (
        <div class="grid">
          <div><label for={`${id}-mask`}>Mask type</label>
            <select id={`${id}-mask`} value={item.type} aria-describedby={`${id}-mask-help`} onChange={(e) => onChange({ type: e.currentTarget.value as MaskType })}>
              {MASK_TYPES.map((t) => <option key={t} value={t}>{t}</option>)}
            </select>
            <small id={`${id}-mask-help`}>They see {MASK_HELP[item.type]}.</small></div>
          {takesExpression(item.type) ? (
            <div><label for={`${id}-expression`}>Mask expression</label>
              <input id={`${id}-expression`} class="mono" maxLength={4000} spellcheck={false} autocomplete="off" placeholder="concat('***', substr({col}, -2))" aria-describedby={`${id}-expression-help`}
                value={item.expression} onInput={(e) => onChange({ expression: e.currentTarget.value })} />
              <small id={`${id}-expression-help`}>A SQL expression; <code>{'{col}'}</code> stands for the column.</small></div>
          ) : null}
        </div>
      ) : item.effect === 'filter' ? (
        <>
          <label for={`${id}-filter`}>Filter expression</label>
          <textarea id={`${id}-filter`} class="mono" rows={2} maxLength={4000} spellcheck={false} placeholder="region = 'eu'" aria-describedby={`${id}-filter-help`}
            value={item.filter} onInput={(e) => onChange({ filter: e.currentTarget.value })} />
          <small id={`${id}-filter-help`}>A SQL boolean expression over the table: they see only the rows it keeps.</small>
        </>
      ) : (
        <fieldset class="inline-checks">
          <legend>Access types</legend>
          {ACCESSES.map((a) => <label key={a} title={ACCESS_HELP[a]}><input type="checkbox" checked={item.accesses.includes(a)} onChange={(e) => onChange({ accesses: toggle(item.accesses, a, e.currentTarget.checked) })} /> {a}</label>)}
        </fieldset>
      )}
      <div class="actions">
        {KIND_OF[item.effect] === 'access'
          ? <label class="check"><input type="checkbox" checked={item.delegate} onChange={(e) => onChange({ delegate: e.currentTarget.checked })} /> May administer what this item grants (delegate admin)</label>
          : <span />}
        <Button class="secondary outline small" aria-label={`Remove ${title.toLowerCase()}`} onClick={onRemove}>Remove</Button>
      </div>
    </fieldset>
  );
}
