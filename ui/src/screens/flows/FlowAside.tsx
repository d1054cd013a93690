// Beside the flow editor: the docs of the task under the cursor (from the flow model's JSON
// Schema, the one completion reads: editor/schemaDocs.ts), and the workspace switches the flow's
// tasks need (a `script` task runs a container: `workflow_containers`; a plugin task, whose type
// has a dot: `workflow_plugins`), shown when off, with a button for the workspace's ws_admin.
import { useEffect, useState } from 'preact/hooks';
import { api, ok } from '../../api/client';
import { Button, useBusy } from '../../components/ui';
import type { Schema } from '../../editor/schemaComplete';
import { docAt, type TypeDoc } from '../../editor/schemaDocs';
import { may } from '../../lib/access';
import { say } from '../../lib/messages';
import { reportTo, useSession } from '../../lib/session';
import { useLoad } from '../../lib/useLoad';

export function FlowDocs({ schema, text, pos }: { schema(): Promise<Schema>; text: string; pos: number }) {
  const [root, setRoot] = useState<Schema | null>(null);
  useEffect(() => { void schema().then(setRoot, (err: unknown) => console.warn('flow schema not loaded', err)); }, []);
  const doc: TypeDoc | null = root ? docAt(root, text, Math.min(pos, text.length)) : null;
  return (
    <aside class="flow-docs" aria-labelledby="flow-docs-title">
      <h2 id="flow-docs-title">{doc ? <>Task type <code>{doc.type}</code></> : 'Docs'}</h2>
      {!doc ? <p class="muted small-text" id="flow-docs-empty">Put the cursor in a task (or a trigger) with a <code>type</code> to see its keys here.</p> : (
        <div id="flow-docs">
          {doc.description ? <p class="small-text">{doc.description}</p> : null}
          <dl class="doc-keys">
            {doc.keys.map((k) => (
              <div key={k.key} data-key={k.key}>
                <dt><code>{k.key}</code> <small class="muted">{k.type}{k.required ? ', required' : ''}</small></dt>
                {k.description ? <dd class="small-text">{k.description}</dd> : null}
              </div>
            ))}
          </dl>
        </div>
      )}
    </aside>
  );
}

const SWITCHES = [
  { key: 'workflow_containers' as const, needed: /^\s*(?:-\s+)?type:\s*["']?script["']?\s*(#.*)?$/m, why: 'a script task runs a container' },
  { key: 'workflow_plugins' as const, needed: /^\s*(?:-\s+)?type:\s*["']?[A-Za-z][\w-]*(\.[\w-]+)+["']?\s*(#.*)?$/m, why: 'a plugin task (a type with a dot) runs a plugin' },
];

export function Switches({ ws, source }: { ws: string; source: string }) {
  const session = useSession();
  const admin = may(session.me, ws, 'ws_admin');
  const [busy, run] = useBusy();
  const needs = SWITCHES.filter((s) => s.needed.test(source));
  const w = useLoad(async () => (needs.length ? ok(api.GET('/api/workspaces/{ws}', { params: { path: { ws } } })) : null), [ws, needs.map((n) => n.key).join()]);
  const off = needs.filter((s) => w.data && !w.data[s.key]);
  if (off.length === 0) return null;
  const turnOn = (key: (typeof SWITCHES)[number]['key']) => void run(async () => {
    try {
      await ok(api.PUT('/api/workspaces/{ws}/switches', { params: { path: { ws } }, body: { [key]: true } }));
      await w.reload();
      say(`Turned on ${key} in ${ws}.`);
    } catch (err) { reportTo(session)(err); }
  });
  return (
    <div class="notice switches" id="flow-switches">
      {off.map((s) => (
        <p key={s.key} data-switch={s.key}>
          This flow needs the <code>{s.key}</code> switch, which is off in {ws}: {s.why}, and it would fail at run time.{' '}
          {admin ? <Button class="small" busy={busy} onClick={() => turnOn(s.key)}>Turn on {s.key}</Button> : <span>Ask a ws_admin of {ws} to turn it on.</span>}
        </p>
      ))}
    </div>
  );
}
