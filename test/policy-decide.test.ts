// What the workspace's policies decide for one subject and one table on the embedded engine
// (src/policy/decide.ts, docs/machines.md "Policies on the embedded engine"), from tables of
// policies as stored, without services. The expected answers are Apache Ranger's as its Trino
// plugin evaluates the same policies (resource matching with wildcards and case folding, deny
// before allow, the evaluation order of policies, first matching item), except where svc is
// stricter on purpose: a deny item of a catalog- or schema-level policy covers the tables below.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decide, preparePolicies, type EngineAccess, type EngineTarget, type StoredPolicy } from '../src/policy/decide.js';

type Spec = Partial<StoredPolicy> & { name: string; resources: Record<string, string[]> };
const policy = (s: Spec): StoredPolicy => ({ allow: [], deny: [], masks: [], row_filters: [], ...s });
const prepare = (...specs: Spec[]) => preparePolicies(specs.map(policy), 1);

const alice = { users: ['alice@example.com'], groups: ['analysts'], roles: ['ws_viewer'] };
const bob = { users: ['bob@example.com'], groups: ['engineers'], roles: ['ws_editor'] };
const emp: EngineTarget = { catalog: 'iceberg', schema: 'hr', table: 'employees', columns: ['name', 'ssn', 'salary'] };
const on = (schema: string, table?: string, columns?: string[]): EngineTarget => ({ catalog: 'iceberg', schema, ...(table ? { table } : {}), ...(columns ? { columns } : {}) });
const denyTo = (accesses: string[], who: { users?: string[]; groups?: string[]; roles?: string[] } = { users: ['alice@example.com'] }) => [{ ...who, accesses }];
const deniedBy = (p: ReturnType<typeof prepare>, who = alice, target = emp, access: EngineAccess = 'select') => decide(p, who, target, access).denied?.policy;

test('resources match with Ranger wildcards (* any run, ? one character), case-insensitively', () => {
  const p = prepare({ name: 'hr tables', resources: { catalog: ['iceberg'], schema: ['h?'], table: ['emp*'] }, deny: denyTo(['select']) });
  assert.equal(deniedBy(p), 'hr tables');
  assert.equal(deniedBy(p, alice, on('HR', 'Employees_2024')), 'hr tables', 'the Trino definition matches ignoring case');
  assert.equal(deniedBy(p, alice, on('hr', 'payroll')), undefined);
  assert.equal(deniedBy(p, alice, on('hrx', 'employees')), undefined, '? is exactly one character');
  assert.equal(deniedBy(p, alice, { ...emp, catalog: 'other' }), undefined);
  const dots = prepare({ name: 'dots', resources: { catalog: ['iceberg'], schema: ['a.b'], table: ['*'] }, deny: denyTo(['select']) });
  assert.equal(deniedBy(dots, alice, on('a.b', 't')), 'dots', 'a nested namespace is one dotted schema name');
  assert.equal(deniedBy(dots, alice, on('axb', 't')), undefined, 'a dot is a dot, not a wildcard');
});

test('a schema-level (or catalog-level) deny covers every table below it, and the schema itself', () => {
  const p = prepare({ name: 'no hr', resources: { catalog: ['iceberg'], schema: ['hr'] }, deny: denyTo(['select', 'drop']) });
  assert.equal(deniedBy(p), 'no hr');
  assert.equal(deniedBy(p, alice, on('hr', 'anything', ['a'])), 'no hr');
  assert.equal(deniedBy(p, alice, on('hr'), 'drop'), 'no hr', 'DROP SCHEMA hr');
  assert.equal(deniedBy(p, alice, on('sales', 't')), undefined);
  const all = prepare({ name: 'no iceberg', resources: { catalog: ['iceberg'] }, deny: denyTo(['insert']) });
  assert.deepEqual(decide(all, alice, on('x', 'y'), 'insert').denied, { policy: 'no iceberg', access: 'insert' });
});

test('a table-level policy does not reach the schema; one whose lower levels are * does (Ranger SELF_AND_ALL_DESCENDANTS)', () => {
  const t = prepare({ name: 'one table', resources: { catalog: ['iceberg'], schema: ['hr'], table: ['employees'] }, deny: denyTo(['drop']) });
  assert.equal(deniedBy(t, alice, on('hr'), 'drop'), undefined);
  assert.equal(deniedBy(t, alice, emp, 'drop'), 'one table');
  const star = prepare({ name: 'every table', resources: { catalog: ['iceberg'], schema: ['hr'], table: ['*'], column: ['*'] }, deny: denyTo(['drop']) });
  assert.equal(deniedBy(star, alice, on('hr'), 'drop'), 'every table');
});

test('column-level denies: the named columns only; a * column denies the table (COUNT(*) too)', () => {
  const p = prepare({ name: 'no ssn', resources: { catalog: ['iceberg'], schema: ['hr'], table: ['employees'], column: ['ssn', 'sal*'] }, deny: denyTo(['select']) });
  const d = decide(p, alice, emp, 'select');
  assert.equal(d.denied, undefined, 'the table is readable: COUNT(*) reads no column (Ranger: DESCENDANT, not matched)');
  assert.deepEqual([...d.deniedColumns], [['ssn', 'no ssn'], ['salary', 'no ssn']]);
  assert.equal(decide(p, bob, emp, 'select').deniedColumns.size, 0);
  assert.equal(deniedBy(p, alice, emp, 'insert'), undefined, 'a column deny is about reading');
  const every = prepare({ name: 'no columns', resources: { catalog: ['iceberg'], schema: ['hr'], table: ['employees'], column: ['*'] }, deny: denyTo(['select']) });
  assert.equal(deniedBy(every), 'no columns');
});

test('items name users, groups (public: everyone), roles, and {USER} (any user)', () => {
  const res = { catalog: ['iceberg'], schema: ['hr'], table: ['employees'] };
  assert.equal(deniedBy(prepare({ name: 'g', resources: res, deny: denyTo(['select'], { groups: ['analysts'] }) })), 'g');
  assert.equal(deniedBy(prepare({ name: 'g', resources: res, deny: denyTo(['select'], { groups: ['analysts'] }) }), bob), undefined);
  assert.equal(deniedBy(prepare({ name: 'r', resources: res, deny: denyTo(['select'], { roles: ['ws_editor'] }) }), bob), 'r');
  assert.equal(deniedBy(prepare({ name: 'r', resources: res, deny: denyTo(['select'], { roles: ['ws_editor'] }) }), alice), undefined);
  assert.equal(deniedBy(prepare({ name: 'pub', resources: res, deny: denyTo(['select'], { groups: ['public'] }) }), bob), 'pub');
  assert.equal(deniedBy(prepare({ name: 'me', resources: res, deny: denyTo(['select'], { users: ['{USER}'] }) }), bob), 'me');
  assert.equal(deniedBy(prepare({ name: 'PUB', resources: res, deny: denyTo(['select'], { groups: ['PUBLIC'], users: ['{user}'] }) }), bob), undefined, 'Ranger names them exactly: public, {USER}');
  const machine = { users: ['engine-7'], groups: [], roles: ['ws_admin'] };
  assert.equal(deniedBy(prepare({ name: 'client', resources: res, deny: denyTo(['select'], { users: ['engine-7'] }) }), machine), 'client', 'a machine client is named by its id');
  assert.equal(deniedBy(prepare({ name: 'case', resources: res, deny: denyTo(['select'], { users: ['ALICE@example.com'] }) })), undefined, 'user names compare exactly, as Ranger compares them');
});

test('accesses: `all` denies every access; a select deny is not a write deny; allow items grant nothing and never undo a deny', () => {
  const res = { catalog: ['iceberg'], schema: ['hr'], table: ['employees'] };
  const all = prepare({ name: 'all', resources: res, deny: denyTo(['all']) });
  for (const a of ['select', 'insert', 'update', 'delete', 'drop', 'create', 'alter'] as const) assert.equal(deniedBy(all, alice, emp, a), 'all', a);
  const sel = prepare({ name: 'sel', resources: res, deny: denyTo(['select']) });
  assert.equal(deniedBy(sel, alice, emp, 'delete'), undefined);
  const both = prepare({ name: 'both', resources: res, allow: [{ users: ['alice@example.com'], accesses: ['all'] }], deny: denyTo(['select'], { groups: ['analysts'] }) });
  assert.equal(deniedBy(both), 'both', 'deny items are evaluated before allow items');
  const allowOnly = prepare({ name: 'allow', resources: res, allow: [{ users: ['bob@example.com'], accesses: ['select'] }] });
  assert.deepEqual(decide(allowOnly, alice, emp, 'select'), { deniedColumns: new Map(), masks: new Map() }, 'not allowed is not denied: the role decides');
});

test('writes are deny only: no masks, column denials or row filters come with them', () => {
  const p = prepare(
    { name: 'mask', resources: { catalog: ['iceberg'], schema: ['hr'], table: ['employees'], column: ['ssn'] }, masks: [{ users: ['alice@example.com'], type: 'MASK' }] },
    { name: 'rows', resources: { catalog: ['iceberg'], schema: ['hr'], table: ['employees'] }, row_filters: [{ users: ['alice@example.com'], filter: 'dept = 1' }] },
  );
  assert.deepEqual(decide(p, alice, emp, 'insert'), { deniedColumns: new Map(), masks: new Map() });
  const read = decide(p, alice, emp, 'select');
  assert.deepEqual([...read.masks], [['ssn', { policy: 'mask', type: 'MASK' }]]);
  assert.deepEqual(read.rowFilter, { policy: 'rows', filter: 'dept = 1' });
});

test('masks: per column, the first matching policy and in it the first item naming the subject; MASK_NONE ends the search unmasked', () => {
  const ssn = { catalog: ['iceberg'], schema: ['hr'], table: ['employees'], column: ['ssn'] };
  const p = prepare({
    name: 'ssn', resources: ssn,
    masks: [{ groups: ['analysts'], type: 'MASK_SHOW_LAST_4' }, { users: ['alice@example.com'], type: 'MASK_NULL' }, { roles: ['ws_editor'], type: 'MASK_NONE' }, { groups: ['public'], type: 'MASK_HASH' }],
  }, { name: 'names', resources: { ...ssn, column: ['name'] }, masks: [{ groups: ['public'], type: 'CUSTOM', expression: "'***'" }] });
  const a = decide(p, alice, emp, 'select');
  assert.deepEqual([...a.masks], [['name', { policy: 'names', type: 'CUSTOM', expression: "'***'" }], ['ssn', { policy: 'ssn', type: 'MASK_SHOW_LAST_4' }]]);
  const b = decide(p, bob, emp, 'select');
  assert.deepEqual([...b.masks.keys()], ['name'], 'MASK_NONE: the editor sees ssn as it is, and no later item applies');
  const carol = { users: ['carol@example.com'], groups: [], roles: ['ws_viewer'] };
  assert.equal(decide(p, carol, emp, 'select').masks.get('ssn')?.type, 'MASK_HASH');
  assert.equal(decide(p, carol, { ...emp, columns: ['salary'] }, 'select').masks.size, 0, 'only the columns named');
});

test('between policies, Ranger\'s evaluation order decides: fewer wildcard levels and principals later, then the name', () => {
  // RangerOptimizedPolicyEvaluator.computeEvalOrder: 10000 - resource discount (25 per '*' level,
  // 10 per level with a '*' inside a value) - one per user or group named - access types - 25.
  const exact = { name: 'a exact', resources: { catalog: ['iceberg'], schema: ['hr'], table: ['employees'], column: ['ssn'] }, masks: [{ users: ['alice@example.com'], type: 'MASK_NULL' }] };
  const wild = { name: 'z wild', resources: { catalog: ['iceberg'], schema: ['*'], table: ['emp*'], column: ['ssn'] }, masks: [{ users: ['alice@example.com'], type: 'MASK_HASH' }] };
  assert.equal(decide(prepare(exact, wild), alice, emp, 'select').masks.get('ssn')?.policy, 'z wild', 'evalOrder 9937 (10000 - 35 - 1 - 2 - 25) before 9972 (10000 - 1 - 2 - 25)');
  const twin = { ...exact, name: 'b exact', masks: [{ users: ['alice@example.com'], type: 'MASK' }] };
  assert.equal(decide(prepare(twin, exact), alice, emp, 'select').masks.get('ssn')?.policy, 'a exact', 'the same evalOrder: by name');
  const many = { ...exact, name: 'c many', masks: [{ users: ['alice@example.com', 'x@example.com', 'y@example.com'], type: 'MASK' }] };
  assert.equal(decide(prepare(exact, many), alice, emp, 'select').masks.get('ssn')?.policy, 'c many', 'more principals named: earlier');
  const deny1 = { name: 'deny b', resources: { catalog: ['iceberg'], schema: ['h*'] }, deny: denyTo(['select']) };
  const deny2 = { name: 'deny a', resources: { catalog: ['iceberg'], schema: ['hr'], table: ['employees'] }, deny: denyTo(['select']) };
  assert.equal(deniedBy(prepare(deny2, deny1)), 'deny b', 'of two denies, the first in evaluation order names the refusal (a wildcard: earlier)');
  assert.equal(deniedBy(prepare(deny2, { ...deny1, resources: { catalog: ['iceberg'], schema: ['hr'] } })), 'deny a', 'the same evalOrder: by name');
});

test('row filters: the first matching policy and item; a policy on another table or for others does not apply', () => {
  const res = { catalog: ['iceberg'], schema: ['hr'], table: ['employees'] };
  const p = prepare(
    { name: 'own rows', resources: res, row_filters: [{ groups: ['engineers'], filter: "team = 'eng'" }, { users: ['{USER}'], filter: 'owner = current_user' }] },
    { name: 'other table', resources: { ...res, table: ['payroll'] }, row_filters: [{ groups: ['public'], filter: 'false' }] },
  );
  assert.deepEqual(decide(p, bob, emp, 'select').rowFilter, { policy: 'own rows', filter: "team = 'eng'" });
  assert.deepEqual(decide(p, alice, emp, 'select').rowFilter, { policy: 'own rows', filter: 'owner = current_user' });
  assert.deepEqual(decide(p, alice, on('hr', 'payroll', ['a']), 'select').rowFilter, { policy: 'other table', filter: 'false' });
  assert.equal(decide(p, alice, on('sales', 'employees', ['a']), 'select').rowFilter, undefined);
});

test('a denied column is not masked, and a denied table ends the decision', () => {
  const col = { catalog: ['iceberg'], schema: ['hr'], table: ['employees'], column: ['ssn'] };
  const p = prepare(
    { name: 'deny ssn', resources: col, deny: denyTo(['select']) },
    { name: 'mask ssn', resources: col, masks: [{ groups: ['public'], type: 'MASK' }] },
    { name: 'filter', resources: { catalog: ['iceberg'], schema: ['hr'], table: ['employees'] }, row_filters: [{ groups: ['public'], filter: 'true' }] },
  );
  const d = decide(p, alice, emp, 'select');
  assert.deepEqual([...d.deniedColumns], [['ssn', 'deny ssn']]);
  assert.equal(d.masks.size, 0);
  const gone = prepare({ name: 'no hr', resources: { catalog: ['iceberg'], schema: ['hr'] }, deny: denyTo(['select']) }, { name: 'mask ssn', resources: col, masks: [{ groups: ['public'], type: 'MASK' }] });
  assert.deepEqual(decide(gone, alice, emp, 'select'), { deniedColumns: new Map(), masks: new Map(), denied: { policy: 'no hr', access: 'select' } });
});
