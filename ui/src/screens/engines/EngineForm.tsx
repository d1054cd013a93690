// Adding an engine (ws_admin): the form first asks the server what would be provisioned
// (`POST .../engines/explain`: image and how it is pinned, resources, labels, rendered files,
// the change against a running one) and shows it; Create is offered only for the form as
// explained, so nobody provisions what they have not seen.
import { useState } from 'preact/hooks';
import { api, ok } from '../../api/client';
import type { Body } from '../../api/types';
import { Button, FormError, useBusy } from '../../components/ui';
import { clearMessages } from '../../lib/messages';
import { reportTo, useSession } from '../../lib/session';

type Kind = Body<'/api/workspaces/{ws}/engines', 'get'>['kinds'][number];
type Explain = Body<'/api/workspaces/{ws}/engines/explain', 'post'>;

export function EngineForm({ ws, kinds, onCreated }: { ws: string; kinds: Kind[]; onCreated(name: string): Promise<void> }) {
  const session = useSession();
  const [form, setForm] = useState<{ name: string; kind: Kind['kind']; version: string; image: string; cpu: string; memory: string }>({ name: '', kind: kinds[0]?.kind ?? 'trino', version: '', image: '', cpu: '', memory: '' });
  const [explained, setExplained] = useState<{ for: string; plan: Explain } | null>(null);
  const [err, setErr] = useState('');
  const [busy, run] = useBusy();
  const kind = kinds.find((k) => k.kind === form.kind);
  const body = () => ({
    name: form.name.trim(), kind: form.kind,
    version: form.image.trim() ? undefined : form.version || undefined, image: form.image.trim() || undefined,
    resources: form.cpu.trim() || form.memory.trim() ? { cpu: form.cpu.trim() || undefined, memory: form.memory.trim() || undefined } : undefined,
  });
  const key = JSON.stringify(body());
  const set = (k: keyof typeof form) => (e: Event) => { setForm({ ...form, [k]: (e.currentTarget as HTMLInputElement).value }); };

  const explain = async (ev: Event) => {
    ev.preventDefault();
    clearMessages(); setErr('');
    try {
      const plan = await run(() => ok(api.POST('/api/workspaces/{ws}/engines/explain', { params: { path: { ws } }, body: body() })));
      setExplained({ for: key, plan });
    } catch (e) { setExplained(null); reportTo(session, setErr)(e); }
  };
  const create = async () => {
    clearMessages(); setErr('');
    try {
      const e = await run(() => ok(api.POST('/api/workspaces/{ws}/engines', { params: { path: { ws } }, body: body() })));
      setExplained(null);
      setForm({ ...form, name: '' });
      await onCreated(e.name);
    } catch (e) { reportTo(session, setErr)(e); }
  };
  const plan = explained?.for === key ? explained.plan : null;

  return (
    <section aria-labelledby="add-engine">
      <h2 id="add-engine">Add an engine</h2>
      <form aria-labelledby="add-engine" onSubmit={explain}>
        <div class="grid">
          <div><label for="engine-name">Name</label><input id="engine-name" required maxLength={40} pattern="[a-z][a-z0-9\-]{0,39}" spellcheck={false} value={form.name} onInput={set('name')} aria-describedby="engine-name-help" />
            <small id="engine-name-help">A lower-case letter, then lower-case letters, digits and -.</small></div>
          <div><label for="engine-kind">Kind</label>
            <select id="engine-kind" value={form.kind} onChange={(e) => setForm({ ...form, kind: e.currentTarget.value as Kind['kind'], version: '' })}>
              {kinds.map((k) => <option key={k.kind} value={k.kind}>{k.title}</option>)}
            </select></div>
          <div><label for="engine-version">Version</label>
            <select id="engine-version" value={form.version} onChange={set('version')} disabled={!!form.image.trim()}>
              <option value="">{kind ? `${kind.default_version} (default)` : 'default'}</option>
              {kind?.versions.filter((v) => v !== kind.default_version).map((v) => <option key={v} value={v}>{v}</option>)}
            </select></div>
        </div>
        <div class="grid">
          <div><label for="engine-image">Image pinned by digest (optional)</label><input id="engine-image" maxLength={512} spellcheck={false} placeholder="repo:tag@sha256:…" value={form.image} onInput={set('image')} /></div>
          <div><label for="engine-cpu">CPU</label><input id="engine-cpu" maxLength={16} placeholder="2" value={form.cpu} onInput={set('cpu')} /></div>
          <div><label for="engine-memory">Memory</label><input id="engine-memory" maxLength={16} placeholder="4Gi" value={form.memory} onInput={set('memory')} /></div>
        </div>
        <FormError text={err} />
        <div class="actions">
          <Button type="submit" class="secondary" busy={busy}>Explain</Button>
          <Button busy={busy} disabled={!plan} onClick={create} aria-describedby="create-help">Create engine</Button>
          <small id="create-help" class="muted">{plan ? 'Creates what is explained below.' : 'Explain first: Create provisions what the explanation shows.'}</small>
        </div>
      </form>
      {plan ? (
        <article id="engine-plan" aria-label="What would be provisioned">
          <dl class="facts">
            <dt>Action</dt><dd>{plan.action}</dd>
            <dt>Provisioner</dt><dd>{plan.provisioner}</dd>
            <dt>Image</dt><dd><code>{plan.image.image}</code> (pinned by {plan.image.pinned_by})</dd>
            <dt>Resources</dt><dd>{plan.resources.cpu} CPU, {plan.resources.memory}</dd>
            <dt>Configuration</dt><dd>{Object.keys(plan.files).length} files in <code>{plan.config_dir}</code>, hash <code>{plan.config_hash.slice(0, 12)}</code></dd>
            <dt>Labels</dt><dd>{Object.entries(plan.labels).map(([k, v]) => <code key={k} class="label">{k}={v} </code>)}</dd>
          </dl>
          {plan.diff.length ? <><h3>Changes</h3><ul>{plan.diff.map((d) => <li key={d}>{d}</li>)}</ul></> : null}
          {Object.entries(plan.files).map(([name, text]) => <details key={name}><summary>{name}</summary><pre>{text}</pre></details>)}
        </article>
      ) : null}
    </section>
  );
}
