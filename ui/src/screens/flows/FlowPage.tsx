// One flow: the YAML editor (validated as the user types, saved as a new revision with Save at the
// top or Ctrl+S; each problem a button that moves to its line; the docs of the task under the
// cursor beside it; the workspace switches a task needs), its revisions with a diff between any
// two, and the topology of its task tree. `flow-new` is the same editor with a starting source;
// saving it creates the flow and opens its page. Unsaved changes are guarded (lib/unsaved.ts).
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ok } from '../../api/client';
import { Button, FormError, Table, useBusy, when } from '../../components/ui';
import { Editor, type Problem, type YamlEditorHandle } from '../../editor/lazy';
import { leaveWithoutAsking, useUnsavedGuard } from '../../lib/unsaved';
import { FlowDocs, Switches } from './FlowAside';
import type { Schema } from '../../editor/schemaComplete';
import { may } from '../../lib/access';
import { clearMessages, say, sayAfterNavigation } from '../../lib/messages';
import { href } from '../../lib/router';
import { reportTo, useSession } from '../../lib/session';
import { useLoad } from '../../lib/useLoad';
import { Topology } from './Topology';
import { RunForm } from './RunForm';
import '../../styles/screens.css';

const STARTER = `id: hello
namespace: company.team
inputs:
  - id: name
    type: STRING
    defaults: world
tasks:
  - id: greet
    type: log
    message: "hello {{ inputs.name }}"
`;

type Tab = 'editor' | 'revisions' | 'topology';

export function FlowPage({ ws, namespace, id, tab }: { ws: string; namespace?: string; id?: string; tab: Tab }) {
  const session = useSession();
  const isNew = namespace === undefined || id === undefined;
  const canEdit = may(session.me, ws, 'ws_editor');
  const flow = useLoad(async () => (isNew ? null : ok(api.GET('/workflows/v1/{ws}/flows/{namespace}/{id}', { params: { path: { ws, namespace: namespace!, id: id! } } }))), [ws, namespace, id]);
  const [text, setText] = useState<string | null>(isNew ? STARTER : null);
  const [problems, setProblems] = useState<Problem[] | null>(null);
  const [saveErr, setSaveErr] = useState('');
  const [saving, run] = useBusy();
  const [showRun, setShowRun] = useState(false);

  const [cursor, setCursor] = useState(0);
  const editor = useRef<YamlEditorHandle | null>(null);
  useEffect(() => { if (flow.data) setText(flow.data.source); }, [flow.data]);
  useEffect(() => { document.title = `${isNew ? 'New flow' : `${namespace}.${id}`} · svc`; }, [namespace, id]);

  // The flow model's JSON Schema, asked for once by the editor's completion (docs/ui.md).
  const schemaOnce = useRef<Promise<Schema> | null>(null);
  const schema = () => (schemaOnce.current ??= ok(api.GET('/workflows/v1/{ws}/flows/schema', { params: { path: { ws } } })).then((x) => x as Schema, (err: unknown) => { schemaOnce.current = null; throw err; }));
  const validate = async (source: string) => (await ok(api.POST('/workflows/v1/{ws}/flows/validate', { params: { path: { ws } }, body: { source } as never }))).problems;

  const save = async (current?: string) => {
    const source = current ?? text;
    if (source === null || saving) return;
    clearMessages();
    setSaveErr('');
    try {
      if (isNew) {
        const f = await run(() => ok(api.POST('/workflows/v1/{ws}/flows', { params: { path: { ws } }, body: { source } as never })));
        sayAfterNavigation(`Created flow ${f.namespace}.${f.id} (revision ${f.revision}).`);
        leaveWithoutAsking();
        location.hash = href.flow(ws, f.namespace, f.id);
      } else {
        const before = flow.data?.revision;
        const f = await run(() => ok(api.PUT('/workflows/v1/{ws}/flows/{namespace}/{id}', { params: { path: { ws, namespace: namespace!, id: id! } }, body: { source } as never })));
        await flow.reload();
        say(f.revision === before ? 'No changes to save.' : `Saved revision ${f.revision}.`);
      }
    } catch (err) {
      reportTo(session, setSaveErr)(err);
    }
  };

  const remove = async () => {
    if (!window.confirm(`Delete flow ${namespace}.${id}? Its revisions and executions are kept.`)) return;
    clearMessages();
    try {
      await ok(api.DELETE('/workflows/v1/{ws}/flows/{namespace}/{id}', { params: { path: { ws, namespace: namespace!, id: id! } } }));
      sayAfterNavigation(`Deleted flow ${namespace}.${id}.`);
      leaveWithoutAsking();
      location.hash = href.flows(ws);
    } catch (err) { reportTo(session)(err); }
  };

  const dirty = !isNew && flow.data !== undefined && flow.data !== null && text !== null && text !== flow.data.source;
  // The flow's own tabs keep the text (this page's state): only leaving the flow asks.
  const own = isNew ? '' : href.flow(ws, namespace!, id!);
  useUnsavedGuard(dirty || (isNew && text !== STARTER), `${isNew ? 'This new flow is not created' : `${namespace}.${id} has unsaved changes`}. Leave and lose them?`,
    (h) => own !== '' && (h === own || h.startsWith(`${own}/`)));
  const title = isNew ? 'New flow' : `${namespace}.${id}`;
  const tabLink = (t: Tab, label: string) => (
    <li><a href={isNew ? undefined : href.flow(ws, namespace!, id!, t === 'editor' ? undefined : t)} aria-current={tab === t ? 'page' : undefined}>{label}</a></li>
  );

  return (
    <>
      <nav aria-label="Breadcrumb" class="crumbs"><ul><li><a href={href.flows(ws)}>Flows</a></li><li>{title}</li></ul></nav>
      <div class="title-row">
        <h1>{title}</h1>
        {canEdit || !isNew ? (
          <div class="actions">
            {canEdit && text !== null ? <Button id="save-flow" busy={saving} onClick={() => void save()} title="Ctrl+S">{isNew ? 'Create flow' : 'Save'}</Button> : null}
            {!isNew ? <a href={href.executions(ws, { namespace, flowId: id })}>Executions</a> : null}
            {canEdit ? <Button id="run-flow" aria-expanded={showRun ? 'true' : 'false'} aria-controls="run-form" onClick={() => setShowRun(!showRun)} disabled={dirty}>Run</Button> : null}
            {canEdit && !isNew ? <Button class="danger" onClick={remove}>Delete</Button> : null}
          </div>
        ) : null}
      </div>
      {!isNew && flow.data && showRun ? <RunForm ws={ws} flow={flow.data} onClose={() => setShowRun(false)} /> : null}
      {!isNew ? <nav aria-label="Flow views" class="tabs"><ul>{tabLink('editor', 'Editor')}{tabLink('revisions', 'Revisions')}{tabLink('topology', 'Topology')}</ul></nav> : null}
      {tab === 'editor' || isNew ? (
        text === null ? <p aria-busy="true">Loading the flow…</p> : (
          <section aria-labelledby="h-source">
            <h2 id="h-source" class="visually-hidden">Source</h2>
            {flow.data ? <p class="hint" id="flow-revision">Revision {flow.data.revision}, saved {when(flow.data.updated_at)}{dirty ? ' · unsaved changes' : ''}</p> : null}
            <FormError text={saveErr} />
            <Switches ws={ws} source={text} />
            <div class="flow-editor-layout">
              <div>
                <Editor id="flow-source" label="Flow source (YAML)" value={text} readOnly={!canEdit} handle={(h) => { editor.current = h; }}
                  validate={validate} schema={schema} onProblems={setProblems} onChange={setText} onSave={(t) => void save(t)} onCursor={setCursor} />
                <Problems problems={problems} onGoto={(line) => editor.current?.goto(line)} />
                {canEdit ? <p class="hint">Ctrl+S saves. Ctrl+Space completes keys and values.</p> : <p class="hint">Your role in {ws} reads flows; ws_editor changes them.</p>}
              </div>
              <FlowDocs schema={schema} text={text} pos={cursor} />
            </div>
          </section>
        )
      ) : tab === 'revisions' ? <Revisions ws={ws} namespace={namespace!} id={id!} canEdit={canEdit} onRestored={() => flow.reload()} />
        : text !== null ? <Topology source={text} /> : null}
    </>
  );
}

function Problems({ problems, onGoto }: { problems: Problem[] | null; onGoto(line: number): void }) {
  const summary = problems === null ? 'Checking…' : problems.length === 0 ? 'No problems.' : `${problems.length} problem${problems.length === 1 ? '' : 's'}.`;
  return (
    <div class="problems">
      <p id="problems-summary" role="status" aria-live="polite" class={problems && problems.length ? 'bad' : 'good'}>{summary}</p>
      {problems && problems.length ? (
        <ul id="problems">
          {problems.map((p, i) => <li key={i}><button type="button" class="link" onClick={() => onGoto(p.line)} aria-label={`Go to line ${p.line}`}><strong>Line {p.line}</strong></button>: {p.path ? <code>{p.path}</code> : null}{p.path ? ' ' : ''}{p.message}</li>)}
        </ul>
      ) : null}
    </div>
  );
}

function Revisions({ ws, namespace, id, canEdit, onRestored }: { ws: string; namespace: string; id: string; canEdit: boolean; onRestored(): Promise<void> }) {
  const session = useSession();
  const path = { ws, namespace, id };
  const list = useLoad(async () => (await ok(api.GET('/workflows/v1/{ws}/flows/{namespace}/{id}/revisions', { params: { path } }))).revisions, [ws, namespace, id]);
  const [pair, setPair] = useState<{ from: number; to: number } | null>(null);
  const [sources, setSources] = useState<{ from: string; to: string } | null>(null);
  const revs = list.data ?? [];

  useEffect(() => {
    if (!pair && revs.length) setPair({ from: revs[Math.min(1, revs.length - 1)].revision, to: revs[0].revision });
  }, [list.data]);
  useEffect(() => {
    if (!pair) return;
    setSources(null);
    const get = (revision: number) => ok(api.GET('/workflows/v1/{ws}/flows/{namespace}/{id}/revisions/{revision}', { params: { path: { ...path, revision } } }));
    Promise.all([get(pair.from), get(pair.to)]).then(([a, b]) => setSources({ from: a.source, to: b.source }), reportTo(session));
  }, [pair?.from, pair?.to]);

  const restore = async (revision: number) => {
    if (!window.confirm(`Restore revision ${revision}? Its source is saved as a new revision.`)) return;
    clearMessages();
    try {
      const r = await ok(api.GET('/workflows/v1/{ws}/flows/{namespace}/{id}/revisions/{revision}', { params: { path: { ...path, revision } } }));
      const f = await ok(api.PUT('/workflows/v1/{ws}/flows/{namespace}/{id}', { params: { path }, body: { source: r.source } as never }));
      await onRestored();
      await list.reload();
      say(`Restored revision ${revision} as revision ${f.revision}.`);
    } catch (err) { reportTo(session)(err); }
  };

  if (list.data === undefined) return <p aria-busy="true">Loading revisions…</p>;
  const select = (key: 'from' | 'to', label: string) => (
    <div>
      <label for={`rev-${key}`}>{label}</label>
      <select id={`rev-${key}`} value={pair ? String(pair[key]) : ''} onChange={(e) => pair && setPair({ ...pair, [key]: Number(e.currentTarget.value) })}>
        {revs.map((r) => <option key={r.revision} value={String(r.revision)}>{`Revision ${r.revision}${r.deleted ? ' (deleted)' : ''}`}</option>)}
      </select>
    </div>
  );
  return (
    <section aria-labelledby="h-revisions">
      <h2 id="h-revisions">Revisions</h2>
      <Table caption={`Revisions of ${namespace}.${id}`} headers={['Revision', 'Saved', 'State', 'Action']} id="revisions-table">
        {revs.map((r, i) => (
          <tr key={r.revision}>
            <th scope="row">{r.revision}</th>
            <td>{when(r.created_at)}</td>
            <td>{r.deleted ? 'deleted' : i === 0 ? 'current' : ''}</td>
            <td>{canEdit && i > 0 && !r.deleted ? <Button class="secondary small" aria-label={`Restore revision ${r.revision}`} onClick={() => restore(r.revision)}>Restore</Button> : null}</td>
          </tr>
        ))}
      </Table>
      {revs.length > 1 ? (
        <>
          <h3>Changes</h3>
          <div class="row">{select('from', 'From')}{select('to', 'To')}</div>
          {sources ? <Editor key={`${pair!.from}-${pair!.to}`} id="revision-diff" label={`Changes from revision ${pair!.from} to revision ${pair!.to}`} value={sources.to} original={sources.from} readOnly />
            : <p aria-busy="true">Loading the sources…</p>}
        </>
      ) : null}
    </section>
  );
}
