// The read-only fields and the one setting the console's screens of issue 28 need, through the
// real routes on PostgreSQL: flows listed with their last run and run count, executions paged by
// cursor and limited to a time range, executions counted by state per hour (the home chart), the
// workspace switches set by its ws_admin (not by an editor), and the Data API access log naming
// the client.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { randomUUID } from 'node:crypto';
import { startTestApp, Browser, type TestApp } from './helpers/app.js';
import { saveYaml, signInAdmin, type Admin } from './helpers/workflow.js';
import { createLocalUser } from '../src/identity/users.js';
import { grantWorkspaceRoleToUser } from '../src/access/grants.js';

let t: TestApp; let admin: Admin;
before(async () => {
  t = await startTestApp({ SVC_WORKFLOW__WORKER_ENABLED: 'false' });
  admin = await signInAdmin(t);
});
after(async () => { await t?.close(); });

const FLOW = (id: string) => `id: ${id}\nnamespace: team\ntasks:\n  - id: hi\n    type: log\n    message: hi\n`;
/** Executions written as the orchestrator would leave them, at chosen times. */
async function executions(flowId: string, rows: Array<{ state: string; at: string; error?: string }>): Promise<string[]> {
  const ids = rows.map(() => randomUUID());
  await t.services.db.insertInto('executions').values(rows.map((r, i) => ({
    id: ids[i], workspace_id: admin.workspaceId, namespace: 'team', flow_id: flowId, flow_revision: 1, state: r.state as never,
    created_at: new Date(r.at), started_at: new Date(r.at), ended_at: r.state === 'RUNNING' ? null : new Date(Date.parse(r.at) + 1500), error: r.error ?? null,
  }))).execute();
  return ids;
}

test('flows list their last run and run count; executions page by cursor and by time range; counts by state per hour', async () => {
  await saveYaml(t, admin, FLOW('nightly'));
  await saveYaml(t, admin, FLOW('never'));
  const now = Date.now();
  const iso = (minsAgo: number) => new Date(now - minsAgo * 60_000).toISOString();
  // Five executions of nightly, two of them at the same instant (the cursor must not skip or repeat either).
  const ids = await executions('nightly', [
    { state: 'SUCCESS', at: iso(300) }, { state: 'SUCCESS', at: iso(120) }, { state: 'FAILED', at: iso(30), error: 'boom' },
    { state: 'SUCCESS', at: iso(10) }, { state: 'FAILED', at: iso(10), error: 'bang' },
  ]);
  const flows = (await admin.browser.get('/workflows/v1/default/flows')).json().flows as Array<{ id: string; runs: number; last_execution: { id: string; state: string } | null }>;
  const nightly = flows.find((f) => f.id === 'nightly')!;
  assert.equal(nightly.runs, 5);
  assert.ok([ids[3], ids[4]].includes(nightly.last_execution!.id), 'the newest execution');
  assert.deepEqual(flows.find((f) => f.id === 'never'), { ...flows.find((f) => f.id === 'never'), runs: 0, last_execution: null });

  // Pages of two: every execution exactly once, newest first.
  const seen: string[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < 5; page++) {
    const res = await admin.browser.get(`/workflows/v1/default/executions?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json() as { executions: Array<{ id: string; created_at: string }>; next_cursor: string | null };
    seen.push(...body.executions.map((e) => e.id));
    cursor = body.next_cursor;
    if (!cursor) break;
  }
  assert.equal(seen.length, 5);
  assert.deepEqual(new Set(seen), new Set(ids));
  assert.deepEqual(seen.slice(2), [ids[2], ids[1], ids[0]]);
  assert.equal((await admin.browser.get('/workflows/v1/default/executions?cursor=nonsense')).statusCode, 400);
  // A time range: the last hour holds three.
  const lastHour = (await admin.browser.get(`/workflows/v1/default/executions?after=${encodeURIComponent(iso(60))}`)).json().executions;
  assert.equal(lastHour.length, 3);

  // The home chart: counts by state per hour since six hours ago.
  const stats = await admin.browser.get(`/workflows/v1/default/executions/stats?since=${encodeURIComponent(iso(360))}&bucket=hour`);
  assert.equal(stats.statusCode, 200, stats.body);
  const buckets = stats.json().buckets as Array<{ at: string; state: string; count: number }>;
  const total = (state: string) => buckets.filter((b) => b.state === state).reduce((n, b) => n + b.count, 0);
  assert.equal(total('SUCCESS'), 3);
  assert.equal(total('FAILED'), 2);
  for (const b of buckets) assert.match(b.at, /T\d\d:00:00\.000Z$/, 'buckets start on the hour');
  assert.equal((await admin.browser.get('/workflows/v1/default/executions/stats?since=yesterday')).statusCode, 400);
});

test('the workspace switches: its ws_admin sets them, an editor may not', async () => {
  const ed = await createLocalUser(t.services.db, { email: 'ed@example.test', password: 'ed-password-1' });
  await grantWorkspaceRoleToUser(t.services.db, admin.workspaceId, ed.id, 'ws_editor', null, new Date());
  const editor = new Browser(t, '198.51.100.61');
  assert.equal((await editor.login('ed@example.test', 'ed-password-1')).statusCode, 200);
  assert.equal((await editor.put('/api/workspaces/default/switches', { workflow_containers: true })).statusCode, 403);
  const res = await admin.browser.put('/api/workspaces/default/switches', { workflow_containers: true });
  assert.equal(res.statusCode, 200, res.body);
  assert.equal(res.json().workflow_containers, true);
  assert.equal(res.json().workflow_plugins, false);
  assert.equal((await editor.get('/api/workspaces/default')).json().workflow_containers, true, 'every member reads the switches');
  assert.equal((await admin.browser.put('/api/workspaces/default/switches', { name: 'renamed' })).statusCode, 400, 'renaming is not a switch');
});
