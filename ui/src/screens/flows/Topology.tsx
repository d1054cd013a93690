// The task tree of a flow drawn as a graph: tasks in order left to right joined by arrows, the
// branches of a parallel task stacked between a fork and a join, an `if` with its then and else
// lanes, foreach and sequential children inside their parent's box. On an execution each task
// shows its state (the worst of its runs, and how many runs a foreach made). It stays a tree of
// ordered lists for screen readers ("1 of 3", nested), the arrows are decoration.
import { useEffect, useState } from 'preact/hooks';
import { parseFlow, type TaskNode } from './flowSource';
import { StateTag } from '../executions/states';
import '../../styles/screens.css';

export type TaskStates = Map<string, { state: string; runs: number }>;

function Node({ task, states }: { task: TaskNode; states?: TaskStates }) {
  const st = states?.get(task.id);
  const group = task.branches.length > 0;
  return (
    <li class={`graph-node${group ? ' graph-group' : ''}${st ? ` node-${st.state.toLowerCase()}` : ''}`} data-task={task.id}>
      <div class="graph-box">
        <strong>{task.id}</strong> <span class="muted small-text">{task.type}</span>
        {st ? <div class="graph-state"><StateTag state={st.state} />{st.runs > 1 ? <small class="muted"> {st.runs} runs</small> : null}</div> : states ? <div class="graph-state"><small class="muted">not run</small></div> : null}
      </div>
      {group ? (
        <div class={`graph-branches ${task.type === 'parallel' ? 'fork' : 'lanes'}`}>
          {task.branches.map((b, i) => (
            <div key={i} class="graph-branch">
              {b.label ? <span class="graph-lane">{b.label}</span> : null}
              <ol class="graph-seq" aria-label={`${b.label ?? (task.type === 'parallel' ? 'branches' : 'tasks')} of ${task.id}`}>
                {(task.type === 'parallel' ? b.tasks.map((t) => [t]) : [b.tasks]).map((seq, j) => (
                  task.type === 'parallel'
                    ? <li key={j} class="graph-parallel"><ol class="graph-seq">{seq.map((t) => <Node key={t.id} task={t} states={states} />)}</ol></li>
                    : seq.map((t) => <Node key={t.id} task={t} states={states} />)
                ))}
              </ol>
            </div>
          ))}
        </div>
      ) : null}
    </li>
  );
}

export function Topology({ source, states, heading = true }: { source: string; states?: TaskStates; heading?: boolean }) {
  const [tree, setTree] = useState<{ tasks: TaskNode[]; triggers: Array<{ id: string; type: string }> } | null | undefined>(undefined);
  useEffect(() => { void parseFlow(source).then(setTree); }, [source]);
  if (tree === undefined) return <p aria-busy="true">Reading the flow…</p>;
  if (tree === null) return <p class="empty">The source is not valid YAML; fix it in the editor to see its topology.</p>;
  return (
    <section aria-labelledby="h-topology">
      <h2 id="h-topology" class={heading ? undefined : 'visually-hidden'}>Topology</h2>
      {tree.triggers.length ? <p>Triggers: {tree.triggers.map((t) => `${t.id} (${t.type})`).join(', ')}</p> : <p class="muted">No triggers: runs from the API or this console.</p>}
      <div class="graph-wrap" tabIndex={0} role="region" aria-label="Task graph">
        <ol class="graph-seq graph-root" id="topology" aria-label="Tasks">{tree.tasks.map((t) => <Node key={t.id} task={t} states={states} />)}</ol>
      </div>
    </section>
  );
}
