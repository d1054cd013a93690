// The byte bounds of the in-process caches whose values grow with what users store or send (issue
// 10: every cache has a byte bound): access snapshots, policy rules per workspace, the catalog's
// person lookups and parsed cron schedules. Each is filled past its budget, on real PostgreSQL,
// and stays within it while every answer stays right (what is not kept is read again).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, type TestApp } from './helpers/app.js';
import { ensureWorkspace } from '../src/workspaces/workspaces.js';
import { grantWorkspaceRoleToUser } from '../src/access/grants.js';
import { AccessResolver } from '../src/access/access.js';
import { PolicyEvaluator } from '../src/policy/evaluate.js';
import { createPolicy } from '../src/policy/policies.js';
import { CLI_ACTOR } from '../src/access/actor.js';
import { catalogCaller, peopleCacheBytes, PEOPLE_CACHE_BYTES } from '../src/catalog/access.js';
import { cronFor, cronCacheBytes, CRON_CACHE_BYTES } from '../src/workflows/triggers.js';

let t: TestApp;
before(async () => { t = await startTestApp(); });
after(async () => { await t.close(); });

const user = async (email: string, sub: string | null = null) =>
  (await t.services.db.insertInto('users').values({ email, sub, name: email } as never).returning('id').executeTakeFirstOrThrow()).id;

test('access snapshots stay within their byte budget, and every person still gets their roles', async () => {
  const slugs = Array.from({ length: 10 }, (_, i) => `access-bytes-${i}-`.padEnd(60, 'w'));
  const ws: string[] = [];
  for (const slug of slugs) ws.push((await ensureWorkspace(t.services.db, slug, null)).workspace.id);
  const people: string[] = [];
  for (let i = 0; i < 8; i++) {
    const id = await user(`access-${i}@example.test`);
    for (const w of ws) await grantWorkspaceRoleToUser(t.services.db, w, id, i % 2 ? 'ws_editor' : 'ws_viewer', null, t.clock.now());
    people.push(id);
  }
  const budget = 32 * 1024;
  const access = new AccessResolver(t.services.db, t.services.clock, budget);
  for (let pass = 0; pass < 2; pass++) {
    for (const [i, id] of people.entries()) {
      const snap = await access.forUser(id);
      assert.equal(snap.workspaces.size, 10);
      assert.equal(snap.workspaces.get(slugs[7]), i % 2 ? 'ws_editor' : 'ws_viewer');
      assert.ok(access.bytes > 0 && access.bytes <= budget, `${access.bytes} bytes kept`);
    }
  }
  const tiny = new AccessResolver(t.services.db, t.services.clock, 1_000);
  assert.equal((await tiny.forUser(people[0])).workspaces.size, 10, 'a snapshot larger than the whole budget is read, not kept');
  assert.equal(tiny.bytes, 0);
});

test('policy rules stay within their byte budget, and each workspace is still judged by its own', async () => {
  const slugs = Array.from({ length: 6 }, (_, i) => `policy-bytes-${i}`);
  for (const [i, slug] of slugs.entries()) {
    await ensureWorkspace(t.services.db, slug, null);
    const users = Array.from({ length: 40 }, (_, k) => `someone-${k}-of-${slug}@example.test`);
    await createPolicy(t.services.db, CLI_ACTOR, slug, { name: `deny ${i}`, resources: { catalog: [slug], schema: ['hr'] }, deny: [{ users, accesses: ['select'] }] }, t.clock.now());
  }
  const budget = 16 * 1024;
  const ev = new PolicyEvaluator(t.services.db, () => t.clock.now().getTime(), budget);
  const who = (email: string) => ({ users: [email], groups: [], roles: [] });
  for (let pass = 0; pass < 2; pass++) {
    for (const [i, slug] of slugs.entries()) {
      assert.deepEqual(await ev.denied(slug, who(`someone-3-of-${slug}@example.test`), { catalog: slug, schema: 'hr' }, ['select']), { policy: `deny ${i}`, access: 'select' });
      assert.equal(await ev.denied(slug, who(`someone-3-of-${slugs[(i + 1) % 6]}@example.test`), { catalog: slug, schema: 'hr' }, ['select']), null);
      assert.ok(ev.bytes > 0 && ev.bytes <= budget, `${ev.bytes} bytes kept`);
    }
  }
});

test('the catalog keeps person lookups within its byte budget, and a person is still found', async () => {
  const principal = (sub: string, email: string | null = null) => ({ kind: 'token' as const, sub, clientId: 'engine-1', actor: 'engine-1', scope: '', workspace: null, email });
  // subjects of 200,000 characters (a provider may name anything): 16 of them are twice the budget
  for (let i = 0; i < 16; i++) {
    const c = await catalogCaller(t.services, principal(`${i}-`.padEnd(200_000, 's')));
    assert.equal(c.actorId, null);
    assert.ok(peopleCacheBytes(t.services) <= PEOPLE_CACHE_BYTES, `${peopleCacheBytes(t.services)} bytes kept`);
  }
  const id = await user('catalog-bytes@example.test', 'sub-catalog-bytes');
  for (let pass = 0; pass < 2; pass++) assert.equal((await catalogCaller(t.services, principal('sub-catalog-bytes'))).actorId, id);
  assert.ok(peopleCacheBytes(t.services) > 0 && peopleCacheBytes(t.services) <= PEOPLE_CACHE_BYTES);
});

test('parsed cron schedules stay within their byte budget, and every expression still gets its answer', () => {
  // a problem repeats the expression: 40 of 100,000 characters are four times the budget
  for (let i = 0; i < 40; i++) {
    const answer = cronFor(`${i} `.padEnd(100_000, '*'), 'UTC');
    assert.ok(typeof answer === 'string' && answer.startsWith('invalid cron expression'), String(answer).slice(0, 80));
    assert.ok(cronCacheBytes() <= CRON_CACHE_BYTES, `${cronCacheBytes()} bytes kept`);
  }
  const daily = cronFor('0 3 * * *', 'Europe/Paris');
  assert.ok(typeof daily !== 'string');
  assert.equal(cronFor('0 3 * * *', 'Europe/Paris'), daily, 'kept');
  assert.ok(cronCacheBytes() > 0 && cronCacheBytes() <= CRON_CACHE_BYTES);
});
