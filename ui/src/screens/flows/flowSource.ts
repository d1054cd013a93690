// Reading a flow's YAML in the browser (the yaml package, loaded with the editor's chunk): its
// declared inputs for the run form, its task tree for the topology view.
export interface InputDecl { id: string; type: 'STRING' | 'INT' | 'FLOAT' | 'BOOLEAN' | 'JSON'; required: boolean; defaults?: unknown; description?: string }
export interface TaskNode { id: string; type: string; branches: Array<{ label: string | null; tasks: TaskNode[] }> }

const asList = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const str = (v: unknown, d = ''): string => (typeof v === 'string' ? v : d);

export async function parseFlow(source: string): Promise<{ inputs: InputDecl[]; tasks: TaskNode[]; triggers: Array<{ id: string; type: string }> } | null> {
  const { parse } = await import('yaml');
  let doc: unknown;
  try { doc = parse(source); } catch { return null; }
  if (!doc || typeof doc !== 'object') return null;
  const d = doc as Record<string, unknown>;
  const inputs = asList(d.inputs).filter((i): i is Record<string, unknown> => Boolean(i) && typeof i === 'object').map((i) => ({
    id: str(i.id), type: (['STRING', 'INT', 'FLOAT', 'BOOLEAN', 'JSON'].includes(str(i.type)) ? str(i.type) : 'STRING') as InputDecl['type'],
    required: i.required === true, defaults: i.defaults, description: typeof i.description === 'string' ? i.description : undefined,
  })).filter((i) => i.id);
  const tree = (v: unknown): TaskNode[] => asList(v).filter((t): t is Record<string, unknown> => Boolean(t) && typeof t === 'object').map((t) => {
    const branches: TaskNode['branches'] = [];
    if (t.type === 'if') {
      branches.push({ label: 'then', tasks: tree(t.then) });
      if (t.else) branches.push({ label: 'else', tasks: tree(t.else) });
    } else if (Array.isArray(t.tasks)) {
      branches.push({ label: null, tasks: tree(t.tasks) });
    }
    return { id: str(t.id, '(no id)'), type: str(t.type, '(no type)'), branches };
  });
  const triggers = asList(d.triggers).filter((t): t is Record<string, unknown> => Boolean(t) && typeof t === 'object').map((t) => ({ id: str(t.id), type: str(t.type) }));
  return { inputs, tasks: tree(d.tasks), triggers };
}

/**
 * The flow's source with one trigger's `disabled` set (or removed, to enable it), keeping the rest
 * of the text as written (comments, order, quoting): what Enable and Disable on the Triggers screen
 * save as a new revision.
 */
export async function setTriggerDisabled(source: string, triggerId: string, disabled: boolean): Promise<string> {
  const { parseDocument, isMap, isSeq } = await import('yaml');
  const doc = parseDocument(source);
  const triggers = doc.get('triggers');
  if (!isSeq(triggers)) throw new Error('the flow declares no triggers');
  const t = triggers.items.find((i) => isMap(i) && i.get('id') === triggerId);
  if (!t || !isMap(t)) throw new Error(`the flow has no trigger ${triggerId}`);
  if (disabled) t.set('disabled', true); else t.delete('disabled');
  return doc.toString();
}
