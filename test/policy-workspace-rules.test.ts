// The embedded engine's read of a workspace's policies (src/policy/workspace-policies.ts), on real
// PostgreSQL: only the named workspace's enabled policies apply, a change applies to the next
// load (the policy version moved), and the prepared policies stay within their byte budget.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, type TestApp } from './helpers/app.js';
import { ensureWorkspace } from '../src/workspaces/workspaces.js';
import { createPolicy, deletePolicy, updatePolicy, type PolicyInput } from '../src/policy/policies.js';
import { CLI_ACTOR } from '../src/access/actor.js';
import { EnginePolicies } from '../src/policy/workspace-policies.js';
import { decide, type EngineTarget } from '../src/policy/decide.js';

let t: TestApp;
before(async () => { t = await startTestApp(); });
after(async () => { await t.close(); });

const alice = { users: ['alice@example.com'], groups: ['analysts'], roles: ['ws_viewer'] };
const emp: EngineTarget = { catalog: 'iceberg', schema: 'hr', table: 'employees', columns: ['name', 'ssn'] };
const table = { catalog: ['iceberg'], schema: ['hr'], table: ['employees'] };
const everything = (suffix: string): PolicyInput[] => [
  { name: `deny ssn ${suffix}`, resources: { ...table, column: ['ssn'] }, deny: [{ users: ['alice@example.com'], accesses: ['select'] }] },
  { name: `mask name ${suffix}`, resources: { ...table, column: ['name'] }, masks: [{ groups: ['analysts'], type: 'MASK' }] },
  { name: `rows ${suffix}`, resources: table, row_filters: [{ roles: ['ws_viewer'], filter: 'false' }] },
];
const summary = (d: ReturnType<typeof decide>) => ({ denied: d.denied?.policy, columns: [...d.deniedColumns], masks: [...d.masks].map(([c, m]) => [c, m.policy]), filter: d.rowFilter?.policy });
const nothing = { denied: undefined, columns: [], masks: [], filter: undefined };

test('only the named workspace\'s enabled policies apply', async () => {
  for (const ws of ['rules-a', 'rules-b']) await ensureWorkspace(t.services.db, ws, null);
  for (const p of everything('b')) await createPolicy(t.services.db, CLI_ACTOR, 'rules-b', p, t.clock.now());
  await createPolicy(t.services.db, CLI_ACTOR, 'rules-a', { name: 'off', is_enabled: false, resources: table, deny: [{ groups: ['public'], accesses: ['all'] }] }, t.clock.now());
  const rules = new EnginePolicies(t.services.db, () => t.clock.now().getTime());
  assert.deepEqual(summary(decide(await rules.load('rules-a'), alice, emp, 'select')), nothing, 'rules-b holds policies on the same names; rules-a\'s own is disabled');
  assert.deepEqual(summary(decide(await rules.load('rules-b'), alice, emp, 'select')), {
    denied: undefined, columns: [['ssn', 'deny ssn b']], masks: [['name', 'mask name b']], filter: 'rows b',
  });
  assert.deepEqual(summary(decide(await rules.load('rules-a'), alice, emp, 'select')), nothing, 'read again from the cache, still only its own');
  assert.deepEqual(await rules.load('no-such-workspace'), { version: -1, access: [], masks: [], rowFilters: [] });
});

test('a saved, enabled or deleted policy applies to the next load', async () => {
  await ensureWorkspace(t.services.db, 'rules-c', null);
  const rules = new EnginePolicies(t.services.db, () => t.clock.now().getTime());
  const load = async () => summary(decide(await rules.load('rules-c'), alice, emp, 'select'));
  assert.deepEqual(await load(), nothing);
  const input: PolicyInput = { name: 'no hr', is_enabled: false, resources: { catalog: ['iceberg'], schema: ['hr'] }, deny: [{ groups: ['analysts'], accesses: ['select'] }] };
  const p = await createPolicy(t.services.db, CLI_ACTOR, 'rules-c', input, t.clock.now());
  assert.deepEqual(await load(), nothing, 'disabled');
  await updatePolicy(t.services.db, CLI_ACTOR, 'rules-c', p.id, { ...input, is_enabled: true }, t.clock.now());
  assert.equal((await load()).denied, 'no hr', 'enabled: the version moved, the cached policies are read again');
  await updatePolicy(t.services.db, CLI_ACTOR, 'rules-c', p.id, { ...input, is_enabled: true, resources: { catalog: ['iceberg'], schema: ['sales'] } }, t.clock.now());
  assert.deepEqual(await load(), nothing, 'changed to another schema');
  await updatePolicy(t.services.db, CLI_ACTOR, 'rules-c', p.id, { ...input, is_enabled: true }, t.clock.now());
  assert.equal((await load()).denied, 'no hr');
  // What invalidates is the version: a row changed behind the service's back (no bump) is not seen.
  await t.services.db.updateTable('policies').set({ is_enabled: false }).where('id', '=', p.id).execute();
  assert.equal((await load()).denied, 'no hr', 'kept at its version');
  await deletePolicy(t.services.db, CLI_ACTOR, 'rules-c', p.id, t.clock.now());
  assert.deepEqual(await load(), nothing, 'deleted');
});

test('prepared policies stay within their byte budget, and every workspace is still judged by its own', async () => {
  const slugs = Array.from({ length: 6 }, (_, i) => `rules-bytes-${i}`);
  for (const [i, slug] of slugs.entries()) {
    await ensureWorkspace(t.services.db, slug, null);
    const users = Array.from({ length: 40 }, (_, k) => `someone-${k}-of-${slug}@example.test`);
    await createPolicy(t.services.db, CLI_ACTOR, slug, { name: `deny ${i}`, resources: { catalog: ['iceberg'], schema: ['hr'] }, deny: [{ users, accesses: ['select'] }] }, t.clock.now());
  }
  const budget = 16 * 1024;
  const rules = new EnginePolicies(t.services.db, () => t.clock.now().getTime(), budget);
  const who = (email: string) => ({ users: [email], groups: [], roles: [] });
  for (let pass = 0; pass < 2; pass++) {
    for (const [i, slug] of slugs.entries()) {
      const p = await rules.load(slug);
      assert.equal(decide(p, who(`someone-3-of-${slug}@example.test`), emp, 'select').denied?.policy, `deny ${i}`);
      assert.equal(decide(p, who(`someone-3-of-${slugs[(i + 1) % 6]}@example.test`), emp, 'select').denied, undefined);
      assert.ok(rules.bytes > 0 && rules.bytes <= budget, `${rules.bytes} bytes kept`);
    }
  }
  const tiny = new EnginePolicies(t.services.db, () => t.clock.now().getTime(), 500);
  assert.equal(decide(await tiny.load(slugs[0]!), who(`someone-3-of-${slugs[0]}@example.test`), emp, 'select').denied?.policy, 'deny 0', 'larger than the whole budget: read, not kept');
  assert.equal(tiny.bytes, 0);
});
