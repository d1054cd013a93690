// The planner and the template language as pure functions, table-driven: no database, no Redis,
// no worker. Each planner case gives a flow, the task runs a snapshot holds (by path and state),
// the outcome that prompted the step and whether a kill was requested, and checks what the step
// decides: runs to create (and queue), runs to settle, the execution's new state.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseFlow } from '../src/workflows/flow.js';
import { plan } from '../src/workflows/planner/plan.js';
import { concurrently, inOrder } from '../src/workflows/planner/children.js';
import type { Outcome, Render, Run, Snapshot, Status } from '../src/workflows/planner/types.js';
import { outputsFor } from '../src/workflows/context.js';
import { render, truthy, type TemplateFunctions } from '../src/workflows/template.js';

const NOW = new Date('2026-01-02T03:04:05Z');
const fns: TemplateFunctions = {
  secret: async (name) => { throw new Error(`no secret ${name} here`); },
  read: async (path) => `file ${path}`,
};
/** Renders with the real template language over the inputs and the outputs the runs hold. */
const renderWith = (inputs: Record<string, unknown>): Render => (value, scope) =>
  render(value, { inputs, outputs: outputsFor(scope.runs), taskrun: { id: scope.runId, value: scope.iteration?.value, index: scope.iteration?.index } }, fns);

type RunRow = [path: string, taskId: string, state: Run['state'], outputs?: Record<string, unknown>];

function snapshot(runs: RunRow[], over: Partial<Snapshot['exec']> = {}): Snapshot {
  return {
    exec: {
      id: 'e1', workspace_id: 'w', namespace: 'n', flow_id: 'f', flow_revision: 1, inputs: {}, created_at: NOW,
      state: runs.length ? 'RUNNING' : 'CREATED', version: '3', kill_requested_at: null, ended_at: null, ...over,
    },
    runs: runs.map(([path, task_id, state, outputs]) => ({
      id: `r-${path}`, parent_id: null, task_id, path, state, outputs: outputs ?? {}, iteration: null, error: null, attempt: state === 'QUEUED' ? 0 : 1,
      ended_at: ['SUCCESS', 'FAILED', 'KILLED', 'SKIPPED'].includes(state) ? NOW : null,
    })),
  };
}

function outcome(path: string, state: Run['state'], extra: Partial<Outcome> = {}): Outcome {
  return {
    runId: `r-${path}`, guard: { prevAttempt: 0 }, state, attemptState: state === 'RETRYING' ? 'FAILED' : state, attempt: 1,
    outputs: {}, error: state === 'FAILED' || state === 'RETRYING' ? 'boom' : null, startedAt: NOW, endedAt: NOW, worker: 'w1', reason: null,
    log: { lines: 0, bytes: 0, withheld: 0, rows: [] }, ...extra,
  };
}

const leaf = (id: string, type = 'output', more = '') => `  - id: ${id}\n    type: ${type}\n${type === 'output' ? `    values: { id: ${id} }\n` : type === 'fail' ? '    message: no\n' : '    message: hi\n'}${more}`;
const flow = (tasks: string) => parseFlow(`id: f\nnamespace: n\ninputs:\n  - id: go\n    type: BOOLEAN\n    defaults: true\ntasks:\n${tasks}`).def;

interface Case {
  name: string;
  tasks: string;
  runs?: RunRow[];
  outcome?: Outcome;
  kill?: boolean;
  ended?: boolean;
  inputs?: Record<string, unknown>;
  /** [path, state] of the runs the step creates */
  inserts: Array<[string, string]>;
  /** [path, state] of existing runs the step changes (the outcome's run is recorded by the store) */
  changed?: Array<[string, string]>;
  /** paths of the leaves queued */
  leaves?: string[];
  state?: string;
  error?: string | null;
  /** outputs of the ended execution */
  outputs?: Record<string, unknown>;
  /** [path, outputs] of flowable runs */
  decided?: Array<[string, Record<string, unknown>]>;
}

const parallel3 = `  - id: p\n    type: parallel\n    concurrency: 2\n    tasks:\n${[leaf('a'), leaf('b'), leaf('c')].map((t) => t.replace(/^ {2}/gm, '      ')).join('')}`;
const ifTask = `  - id: check\n    type: if\n    condition: "{{ inputs.go }}"\n    then:\n${leaf('yes').replace(/^ {2}/gm, '      ')}    else:\n${leaf('no').replace(/^ {2}/gm, '      ')}`;
const foreach = (values: string, concurrency = 2) => `  - id: each\n    type: foreach\n    concurrency: ${concurrency}\n    values: ${values}\n    tasks:\n${leaf('item').replace(/^ {2}/gm, '      ')}`;

const CASES: Case[] = [
  { name: 'a new execution starts its first task and runs', tasks: leaf('a') + leaf('b'), inserts: [['0', 'QUEUED']], leaves: ['0'], state: 'RUNNING' },
  { name: 'the outcome of the first task starts the second', tasks: leaf('a') + leaf('b'), runs: [['0', 'a', 'RUNNING']], outcome: outcome('0', 'SUCCESS'), inserts: [['1', 'QUEUED']], leaves: ['1'] },
  {
    name: 'the last success ends the execution with the outputs of its output tasks', tasks: leaf('a') + leaf('b'),
    runs: [['0', 'a', 'SUCCESS', { id: 'a' }], ['1', 'b', 'RUNNING']], outcome: outcome('1', 'SUCCESS', { outputs: { id: 'b' } }),
    inserts: [], state: 'SUCCESS', error: null, outputs: { a: { id: 'a' }, b: { id: 'b' } },
  },
  { name: 'a failed task fails the execution and names itself', tasks: leaf('a') + leaf('b'), runs: [['0', 'a', 'RUNNING']], outcome: outcome('0', 'FAILED'), inserts: [], state: 'FAILED', error: 'task a failed: boom' },
  { name: 'a run that will retry changes nothing else', tasks: leaf('a') + leaf('b'), runs: [['0', 'a', 'RUNNING']], outcome: outcome('0', 'RETRYING'), inserts: [] },
  { name: 'an ended execution only records a late outcome', tasks: leaf('a'), runs: [['0', 'a', 'RUNNING']], ended: true, outcome: outcome('0', 'SUCCESS'), inserts: [] },
  { name: 'a disabled task is passed over', tasks: leaf('a', 'output', '    disabled: true\n') + leaf('b'), inserts: [['1', 'QUEUED']], leaves: ['1'], state: 'RUNNING' },
  { name: 'parallel starts as many children as its concurrency', tasks: parallel3, inserts: [['0', 'RUNNING'], ['0/0', 'QUEUED'], ['0/1', 'QUEUED']], leaves: ['0/0', '0/1'], state: 'RUNNING' },
  {
    name: 'parallel starts the next child when one ends', tasks: parallel3, runs: [['0', 'p', 'RUNNING'], ['0/0', 'a', 'RUNNING'], ['0/1', 'b', 'RUNNING']],
    outcome: outcome('0/0', 'SUCCESS'), inserts: [['0/2', 'QUEUED']], leaves: ['0/2'],
  },
  {
    name: 'parallel starts nothing after a child failed, and fails once the others end', tasks: parallel3,
    runs: [['0', 'p', 'RUNNING'], ['0/0', 'a', 'FAILED'], ['0/1', 'b', 'RUNNING']], outcome: outcome('0/1', 'SUCCESS'),
    inserts: [], changed: [['0', 'FAILED']], state: 'FAILED', error: 'task a failed: failed',
  },
  { name: 'if renders its condition once and runs the branch taken', tasks: ifTask, inserts: [['0', 'RUNNING'], ['0/then/0', 'QUEUED']], leaves: ['0/then/0'], state: 'RUNNING', decided: [['0', { branch: 'then', condition: true }]] },
  { name: 'if takes else on a false condition', tasks: ifTask, inputs: { go: false }, inserts: [['0', 'RUNNING'], ['0/else/0', 'QUEUED']], leaves: ['0/else/0'], state: 'RUNNING', decided: [['0', { branch: 'else', condition: false }]] },
  {
    name: 'foreach renders its values once and runs up to its concurrency', tasks: foreach('"{{ json(\'[1, 2, 3]\') }}"'),
    inserts: [['0', 'RUNNING'], ['0[0]/0', 'QUEUED'], ['0[1]/0', 'QUEUED']], leaves: ['0[0]/0', '0[1]/0'], state: 'RUNNING', decided: [['0', { values: [1, 2, 3] }]],
  },
  { name: 'foreach over values that are not a list fails, with the reason', tasks: foreach('"{{ inputs.go }}"'), inserts: [['0', 'FAILED']], state: 'FAILED', error: 'failed' },
  { name: 'foreach over no values is done at once', tasks: foreach('[]'), inserts: [['0', 'SUCCESS']], state: 'SUCCESS' },
  {
    name: 'a kill cancels queued work and ends the execution killed', tasks: leaf('a') + leaf('b'), kill: true,
    runs: [['0', 'a', 'QUEUED']], inserts: [], changed: [['0', 'KILLED']], state: 'KILLED',
  },
  {
    name: 'a kill waits for running work', tasks: leaf('a') + leaf('b'), kill: true, runs: [['0', 'a', 'RUNNING']], inserts: [],
  },
  {
    name: 'a kill starts no new parallel child and ends killed once the others end', tasks: parallel3, kill: true,
    runs: [['0', 'p', 'RUNNING'], ['0/0', 'a', 'SUCCESS'], ['0/1', 'b', 'RUNNING']], outcome: outcome('0/1', 'SUCCESS'),
    inserts: [], changed: [['0', 'KILLED']], state: 'KILLED',
  },
];

for (const c of CASES) {
  test(`planner: ${c.name}`, async () => {
    const snap = snapshot(c.runs ?? [], { kill_requested_at: c.kill ? NOW : null, ended_at: c.ended ? NOW : null, state: c.ended ? 'SUCCESS' : undefined as never });
    if (!c.ended) snap.exec.state = (c.runs ?? []).length ? 'RUNNING' : 'CREATED';
    const p = await plan(flow(c.tasks), snap, c.outcome, renderWith({ go: true, ...c.inputs }), NOW);
    assert.deepEqual(p.inserts.map((r) => [r.path, r.state]), c.inserts, 'runs created');
    assert.deepEqual([...p.changed].filter((r) => r.id !== c.outcome?.runId).map((r) => [r.path, r.state]), c.changed ?? [], 'runs changed');
    const byId = new Map(p.runs.map((r) => [r.id, r.path]));
    assert.deepEqual(p.leaves.map((l) => byId.get(l.taskRunId)), c.leaves ?? [], 'leaves queued');
    assert.equal(p.exec.state, c.state, 'execution state');
    assert.equal(p.ended, c.state && ['SUCCESS', 'FAILED', 'KILLED'].includes(c.state) ? c.state : null);
    if (c.error !== undefined) assert.equal(p.exec.error, c.error);
    if (c.outputs) assert.deepEqual(p.exec.outputs, c.outputs);
    for (const [path, outputs] of c.decided ?? []) assert.deepEqual(p.runs.find((r) => r.path === path)?.outputs, outputs);
    if (p.exec.ended_at) assert.equal(p.exec.ended_at, NOW);
  });
}

test('planner: a step is deterministic but for new run ids', async () => {
  const def = flow(parallel3);
  const a = await plan(def, snapshot([]), undefined, renderWith({}), NOW);
  const b = await plan(def, snapshot([]), undefined, renderWith({}), NOW);
  assert.deepEqual(a.inserts.map((r) => [r.path, r.state, r.parent_id === a.inserts[0].id || r.parent_id === null]), b.inserts.map((r) => [r.path, r.state, r.parent_id === b.inserts[0].id || r.parent_id === null]));
});

// The rules of children, alone: [statuses of started children], concurrency, killing -> status.
const RULES: Array<[string, Array<Status | null>, number, boolean, Status]> = [
  ['all done', ['done', 'done'], 2, false, 'done'],
  ['one running', ['done', 'running'], 2, false, 'running'],
  ['a slot free starts the next', ['done', null], 1, false, 'running'],
  ['failed with others pending', ['failed', null], 1, false, 'failed'],
  ['killed', ['killed', 'done'], 2, false, 'killed'],
  ['kill with children pending', ['done', null], 2, true, 'killed'],
  ['kill after all ended keeps the failure', ['failed', 'done'], 2, true, 'failed'],
  ['kill after all ended keeps success', ['done', 'done'], 2, true, 'done'],
];
for (const [name, statuses, concurrency, killing, expected] of RULES) {
  test(`children, concurrently: ${name}`, async () => {
    const visited: number[] = [];
    const s = await concurrently(statuses.length, concurrency, killing, (i) => statuses[i] !== null, async (i) => { visited.push(i); return statuses[i] ?? 'running'; });
    assert.equal(s, expected);
  });
}

test('children, in order: the first child not done decides and later ones are not visited', async () => {
  const visited: number[] = [];
  const statuses: Status[] = ['done', 'failed', 'running'];
  assert.equal(await inOrder(3, async (i) => { visited.push(i); return statuses[i]; }), 'failed');
  assert.deepEqual(visited, [0, 1]);
  assert.equal(await inOrder(0, async () => 'failed'), 'done');
});

// The template language: [template, context, expected value].
const CTX = {
  inputs: { name: 'Ada', n: 3, flag: false, list: [1, 2], nested: { k: 'v' }, empty: '' },
  outputs: { t1: { value: 42, rows: [{ id: 'x' }] } },
  taskrun: { value: 'eu', index: 1 },
};
const TEMPLATES: Array<[string, unknown, unknown]> = [
  ['plain text', 'no templates here', 'no templates here'],
  ['a path keeps its type', '{{ inputs.n }}', 3],
  ['a list keeps its type', '{{ inputs.list }}', [1, 2]],
  ['text and expressions join as text', 'hi {{ inputs.name }}, n={{ inputs.n }}', 'hi Ada, n=3'],
  ['nested paths', '{{ inputs.nested.k }}', 'v'],
  ['indexes', '{{ outputs.t1.rows[0].id }}', 'x'],
  ['outputs of earlier tasks', '{{ outputs.t1.value }}', 42],
  ['taskrun of an iteration', '{{ taskrun.value }}-{{ taskrun.index }}', 'eu-1'],
  ['a missing path is empty', '[{{ inputs.nope }}]', '[]'],
  ['equality', "{{ inputs.name == 'Ada' }}", true],
  ['inequality', '{{ inputs.n != 3 }}', false],
  ['ordering', '{{ inputs.n >= 3 && inputs.n < 4 }}', true],
  ['or and not', '{{ inputs.flag || !inputs.flag }}', true],
  ['parentheses', '{{ !(inputs.n > 1) }}', false],
  ['number and string literals', "{{ 'a' }}{{ 2.5 }}", 'a2.5'],
  ['json() parses text', "{{ json('[1, {\"a\": 2}]') }}", [1, { a: 2 }]],
  ['read() reads a namespace file', "{{ read('data/x.csv') }}", 'file data/x.csv'],
  ['a template in a list and a mapping', ['{{ inputs.n }}', { k: '{{ inputs.name }}' }], [3, { k: 'Ada' }]],
  ['an unclosed {{ is text', 'a {{ b', 'a {{ b'],
];
for (const [name, template, expected] of TEMPLATES) {
  test(`template: ${name}`, async () => {
    assert.deepEqual(await render(template, CTX, fns), expected);
  });
}

const TEMPLATE_ERRORS: Array<[string, string, RegExp]> = [
  ['an empty expression', '{{}}', /empty/],
  ['an unknown function', "{{ nope('x') }}", /nope/],
  ['a secret that is not defined', "{{ secret('X') }}", /no secret X/],
];
for (const [name, template, message] of TEMPLATE_ERRORS) {
  test(`template error: ${name}`, async () => {
    await assert.rejects(render(template, CTX, fns), message);
  });
}

test('truthiness of an if condition: empty text, "0", "false", 0, false, null and an empty list are false', () => {
  const table: Array<[unknown, boolean]> = [['', false], ['0', false], ['FALSE', false], [0, false], [false, false], [null, false], [undefined, false], [[], false], ['x', true], [1, true], [true, true], [[0], true], [{}, true]];
  for (const [v, t] of table) assert.equal(truthy(v), t, JSON.stringify(v));
});

test('planner: a foreach visits only the iterations still in the snapshot and those from its bound on, and settles each that finishes, out of order too', async () => {
  // iterations 0 to 3 started; 0, 2 and 3 finished and were settled (not in the snapshot); 1 runs
  const snap = snapshot([['0', 'each', 'RUNNING', { values: [1, 2, 3, 4, 5, 6] }], ['0[1]/0', 'item', 'RUNNING']]);
  snap.runs[0].settled_iterations = 4;
  const p = await plan(flow(foreach('[1, 2, 3, 4, 5, 6]')), snap, outcome('0[1]/0', 'SUCCESS'), renderWith({}), NOW);
  assert.deepEqual(p.inserts.map((r) => r.path), ['0[4]/0', '0[5]/0'], 'no settled iteration runs again; the next two start');
  assert.deepEqual(p.settled, ['0[1]/']);
  const each = p.runs.find((r) => r.path === '0')!;
  assert.equal(each.settled_iterations, 6, 'the bound covers every started iteration');
  assert.ok(!p.runs.some((r) => r.path.startsWith('0[1]/')), 'the settled iteration leaves the snapshot');
  // the last two finishing out of order end the foreach
  const last = snapshot([['0', 'each', 'RUNNING', { values: [1, 2, 3, 4, 5, 6] }], ['0[4]/0', 'item', 'RUNNING'], ['0[5]/0', 'item', 'SUCCESS']]);
  last.runs[0].settled_iterations = 6;
  const q = await plan(flow(foreach('[1, 2, 3, 4, 5, 6]')), last, outcome('0[4]/0', 'SUCCESS'), renderWith({}), NOW);
  assert.deepEqual(q.inserts, []);
  assert.equal(q.exec.state, 'SUCCESS');
});
