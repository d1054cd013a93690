// The task tree of a flow as nested lists (a screen reader reads it as a tree of lists; sighted
// users see boxes and connectors): parallel branches side by side, `if` with then/else, foreach
// and sequential children indented.
import { useEffect, useState } from 'preact/hooks';
import { parseFlow, type TaskNode } from './flowSource';

function Node({ task }: { task: TaskNode }) {
  const layout = task.type === 'parallel' ? 'parallel' : 'serial';
  return (
    <li class="topo-node">
      <div class="topo-box"><strong>{task.id}</strong> <span class="muted">{task.type}</span></div>
      {task.branches.map((b, i) => (
        <div key={i} class="topo-branch">
          {b.label ? <span class="topo-label">{b.label}</span> : null}
          <ol class={`topo ${layout}`} aria-label={`${b.label ?? 'children'} of ${task.id}`}>{b.tasks.map((t) => <Node key={t.id} task={t} />)}</ol>
        </div>
      ))}
    </li>
  );
}

export function Topology({ source }: { source: string }) {
  const [tree, setTree] = useState<{ tasks: TaskNode[]; triggers: Array<{ id: string; type: string }> } | null | undefined>(undefined);
  useEffect(() => { void parseFlow(source).then(setTree); }, [source]);
  if (tree === undefined) return <p aria-busy="true">Reading the flow…</p>;
  if (tree === null) return <p class="empty">The source is not valid YAML; fix it in the editor to see its topology.</p>;
  return (
    <section aria-labelledby="h-topology">
      <h2 id="h-topology">Topology</h2>
      {tree.triggers.length ? <p>Triggers: {tree.triggers.map((t) => `${t.id} (${t.type})`).join(', ')}</p> : <p class="muted">No triggers: runs from the API or this console.</p>}
      <ol class="topo serial" id="topology" aria-label="Tasks">{tree.tasks.map((t) => <Node key={t.id} task={t} />)}</ol>
    </section>
  );
}
