// Pieces shared by the connections, policies and tags screens: the resource levels of the policy
// service (catalog > schema > table > column, with `*` and `?` wildcards), rows of key and value
// (connection settings and credentials, tag attributes), and how a screen tells that the policy
// service is off (its routes then answer as unknown routes).
import { ApiError } from '../../api/client';
import type { paths } from '../../api/schema';
import { Button } from '../../components/ui';

export type PolicyInput = paths['/api/workspaces/{ws}/policies']['post']['requestBody']['content']['application/json'];
type Level = keyof PolicyInput['resources'];
/** The levels in the order the server requires them (each needs the one above). */
export const LEVELS: Level[] = ['catalog', 'schema', 'table', 'column'];
export type ResourceText = Record<Level, string>;
export const NO_RESOURCES: ResourceText = { catalog: '', schema: '', table: '', column: '' };

export const splitList = (s: string): string[] => s.split(',').map((x) => x.trim()).filter(Boolean);

/** The form's text per level as the API's resources: empty levels left out. */
export function toResources(t: ResourceText): PolicyInput['resources'] {
  const out: PolicyInput['resources'] = {};
  for (const l of LEVELS) { const v = splitList(t[l]); if (v.length) out[l] = v; }
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

/** Four inputs, one per level; `prefix` keeps ids unique when two forms are on one screen. */
export function ResourceFields({ prefix, value, onChange }: { prefix: string; value: ResourceText; onChange(v: ResourceText): void }) {
  return (
    <fieldset>
      <legend>Resources</legend>
      <div class="grid">
        {LEVELS.map((l) => (
          <div key={l}>
            <label for={`${prefix}-${l}`}>{l[0].toUpperCase() + l.slice(1)}</label>
            <input id={`${prefix}-${l}`} maxLength={4000} spellcheck={false} autocomplete="off" value={value[l]} aria-describedby={`${prefix}-res-help`}
              onInput={(e) => onChange({ ...value, [l]: e.currentTarget.value })} />
          </div>
        ))}
      </div>
      <small id={`${prefix}-res-help`}>Values separated by commas; <code>*</code> and <code>?</code> are wildcards. A catalog is needed, and each level needs the one above.</small>
    </fieldset>
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
