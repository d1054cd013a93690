// The workflow engine end to end: flows saved through the API, executions run by a real BullMQ
// worker pool on real PostgreSQL, Redis and S3.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { startTestAppWithS3, Browser, type TestApp } from './helpers/app.js';
import { initAdministrator } from '../src/bootstrap/init.js';
import { startWorkflowWorker, type WorkflowWorker } from '../src/jobs/workflow-worker.js';
import { saveFlow, run, waitEnded, logsOf } from './helpers/workflows.js';

let t: TestApp;
let worker: WorkflowWorker;
const admin = new Map<string, Browser>();
const WS = 'default';

before(async () => {
  t = await startTestAppWithS3({
    SVC_WORKFLOW__WORKER_ENABLED: 'true', SVC_WORKFLOW__KILL_POLL_MS: '100', SVC_WORKFLOW__LOG_RUN_MAX_LINES: '10',
    SVC_WORKFLOW__STORAGE__MAX_READ_BYTES: '4096', SVC_SECRETS__MASTER_KEY: Buffer.alloc(32, 3).toString('base64'),
  });
  await initAdministrator(t.services.db, { email: 'admin@example.test', password: 'admin-password-1', force: false });
  const b = new Browser(t, '198.51.100.90');
  assert.equal((await b.login('admin@example.test', 'admin-password-1')).statusCode, 200);
  admin.set('b', b);
  worker = await startWorkflowWorker(t.services);
});
after(async () => { await worker.close(); await t.close(); });

const b = () => admin.get('b')!;

describe('flows', () => {
  test('validation names the path and the problem', async () => {
    const res = await b().request('POST', `/workflows/v1/${WS}/flows/validate`, 'id: x\nnamespace: team\ntasks:\n  - id: a\n    type: log\n  - id: a\n    type: sleep\n    duration: soon\n', { headers: { 'content-type': 'application/x-yaml' } });
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().valid, false);
    assert.deepEqual(res.json().problems, [
      { path: 'tasks[0].message', message: 'required' },
      { path: 'tasks[1].duration', message: 'must be an ISO 8601 duration such as PT30S, or seconds' },
    ]);
    const save = await b().request('POST', `/workflows/v1/${WS}/flows`, 'id: x\nnamespace: team\ntasks: []\n', { headers: { 'content-type': 'application/x-yaml' } });
    assert.equal(save.statusCode, 400);
    assert.equal(save.json().message, 'invalid flow: tasks: must list at least one task');
  });

  test('create, update with revisions, get, list, delete', async () => {
    const yaml = 'id: crud\nnamespace: team.a\ntasks:\n  - id: hello\n    type: log\n    message: hi\n';
    await saveFlow(b(), WS, yaml);
    const same = await b().request('POST', `/workflows/v1/${WS}/flows`, yaml, { headers: { 'content-type': 'application/x-yaml' } });
    assert.equal(same.statusCode, 200);
    assert.equal(same.json().revision, 1, 'an unchanged source is not a new revision');
    const upd = await b().request('PUT', `/workflows/v1/${WS}/flows/team.a/crud`, yaml.replace('hi', 'hello'), { headers: { 'content-type': 'application/x-yaml' } });
    assert.equal(upd.statusCode, 200, upd.body);
    assert.equal(upd.json().revision, 2);
    const wrong = await b().request('PUT', `/workflows/v1/${WS}/flows/team.a/other`, yaml, { headers: { 'content-type': 'application/x-yaml' } });
    assert.equal(wrong.statusCode, 400);
    assert.match((await b().get(`/workflows/v1/${WS}/flows/team.a/crud`)).json().source, /hello/);
    assert.deepEqual((await b().get(`/workflows/v1/${WS}/flows/team.a/crud/revisions`)).json().revisions.map((r: { revision: number }) => r.revision), [2, 1]);
    assert.ok((await b().get(`/workflows/v1/${WS}/flows?namespace=team`)).json().flows.some((f: { id: string }) => f.id === 'crud'));
    assert.equal((await b().delete(`/workflows/v1/${WS}/flows/team.a/crud`)).statusCode, 204);
    assert.equal((await b().get(`/workflows/v1/${WS}/flows/team.a/crud`)).statusCode, 404);
  });
});

describe('executions', () => {
  test('log, output and sleep with templates over inputs and earlier outputs', async () => {
    await saveFlow(b(), WS, `
id: basics
namespace: team
inputs:
  - id: name
    type: STRING
    required: true
  - id: n
    type: INT
    defaults: 2
tasks:
  - id: greet
    type: output
    values:
      greeting: "hello {{ inputs.name }}"
      double: "{{ inputs.n }}"
  - id: nap
    type: sleep
    duration: PT0.2S
  - id: say
    type: log
    message:
      - "{{ outputs.greet.greeting }} x{{ inputs.n }}"
      - "second line"
`);
    const bad = await b().post(`/workflows/v1/${WS}/executions/team/basics`, { inputs: { n: 'two' } });
    assert.equal(bad.statusCode, 400);
    assert.match(bad.json().message, /inputs\.name: required/);
    assert.match(bad.json().message, /inputs\.n: expected INT/);
    const id = await run(b(), WS, 'team', 'basics', { name: 'ada' });
    const e = await waitEnded(t, b(), WS, id);
    assert.equal(e.state, 'SUCCESS', JSON.stringify(e));
    assert.deepEqual(e.outputs, { greet: { greeting: 'hello ada', double: 2 } });
    assert.deepEqual(e.task_runs.map((r: { task_id: string; state: string }) => [r.task_id, r.state]), [['greet', 'SUCCESS'], ['nap', 'SUCCESS'], ['say', 'SUCCESS']]);
    const lines = (await logsOf(b(), WS, id)).map((l) => l.line);
    assert.deepEqual(lines, ['hello ada x2', 'second line']);
  });

  test('flow control: sequential, parallel, if and foreach', async () => {
    await saveFlow(b(), WS, `
id: control
namespace: team
inputs:
  - id: items
    type: JSON
    defaults: '["a","b","c"]'
tasks:
  - id: seq
    type: sequential
    tasks:
      - id: s1
        type: log
        message: s1
      - id: par
        type: parallel
        tasks:
          - id: p1
            type: log
            message: p1
          - id: p2
            type: log
            message: p2
  - id: check
    type: if
    condition: "{{ inputs.items[0] == 'a' }}"
    then:
      - id: yes
        type: log
        message: "first is a"
    else:
      - id: no
        type: log
        message: "first is not a"
  - id: each
    type: foreach
    values: "{{ inputs.items }}"
    tasks:
      - id: item
        type: output
        values:
          upper: "item {{ taskrun.value }} #{{ taskrun.index }}"
      - id: echo
        type: log
        message: "{{ outputs.item.upper }}"
`);
    const id = await run(b(), WS, 'team', 'control');
    const e = await waitEnded(t, b(), WS, id);
    assert.equal(e.state, 'SUCCESS', JSON.stringify(e.task_runs.map((r: any) => [r.path, r.state, r.error])));
    const lines = (await logsOf(b(), WS, id)).map((l) => l.line);
    assert.ok(lines.includes('first is a'));
    assert.ok(!lines.includes('first is not a'));
    assert.deepEqual(lines.filter((l) => l.startsWith('item ')), ['item a #0', 'item b #1', 'item c #2'], 'foreach runs its values in order, each iteration sees its own outputs');
    assert.deepEqual(lines.filter((l) => /^p\d$/.test(l)).sort(), ['p1', 'p2']);
    const paths = e.task_runs.map((r: { path: string }) => r.path);
    assert.ok(paths.includes('2[2]/1'));
  });

  test('parallel branches completing at the same moment are all seen (no lost wake-up)', async () => {
    const branches = Array.from({ length: 10 }, (_, i) => `      - id: b${i}\n        type: output\n        values: { i: ${i} }\n`).join('');
    await saveFlow(b(), WS, `id: fan\nnamespace: team\ntasks:\n  - id: par\n    type: parallel\n    tasks:\n${branches}  - id: after\n    type: output\n    values: { done: true }\n`);
    const ids = await Promise.all(Array.from({ length: 5 }, () => run(b(), WS, 'team', 'fan')));
    for (const id of ids) {
      const e = await waitEnded(t, b(), WS, id, 20_000);
      assert.equal(e.state, 'SUCCESS');
      assert.deepEqual(e.outputs.after, { done: true });
    }
  });

  test('a failing task fails the execution and skips what follows; retries make attempts', async () => {
    await saveFlow(b(), WS, `
id: failing
namespace: team
tasks:
  - id: boom
    type: fail
    message: "no luck"
    retry:
      maxAttempts: 3
      interval: PT0.1S
  - id: after
    type: log
    message: never
`);
    const id = await run(b(), WS, 'team', 'failing');
    const e = await waitEnded(t, b(), WS, id);
    assert.equal(e.state, 'FAILED');
    assert.equal(e.error, 'task boom failed: no luck');
    assert.deepEqual(e.task_runs.map((r: { task_id: string; state: string; attempt: number }) => [r.task_id, r.state, r.attempt]), [['boom', 'FAILED', 3]]);
    const attempts = await t.services.db.selectFrom('task_run_attempts').select(['attempt', 'state', 'reason']).where('task_run_id', '=', e.task_runs[0].id).orderBy('attempt').execute();
    assert.deepEqual(attempts.map((a) => [a.attempt, a.state, a.reason]), [[1, 'FAILED', null], [2, 'FAILED', 'retry'], [3, 'FAILED', 'retry']]);
  });

  test('logs can be followed until the execution ends', async () => {
    await saveFlow(b(), WS, 'id: follow\nnamespace: team\ntasks:\n  - id: a\n    type: log\n    message: first\n  - id: nap\n    type: sleep\n    duration: PT0.5S\n  - id: b\n    type: log\n    message: last\n');
    const id = await run(b(), WS, 'team', 'follow');
    const res = await b().get(`/workflows/v1/${WS}/executions/${id}/logs?follow=true`);
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /application\/x-ndjson/);
    assert.deepEqual(res.body.split('\n').filter(Boolean).map((l) => JSON.parse(l).line), ['first', 'last'], 'the stream closed after the last line');
  });

  test('timeout fails a task that runs too long', async () => {
    await saveFlow(b(), WS, 'id: slow\nnamespace: team\ntasks:\n  - id: nap\n    type: sleep\n    duration: PT20S\n    timeout: PT0.5S\n');
    const started = Date.now();
    const e = await waitEnded(t, b(), WS, await run(b(), WS, 'team', 'slow'));
    assert.equal(e.state, 'FAILED');
    assert.equal(e.task_runs[0].error, 'timed out after 0.5 s');
    assert.ok(Date.now() - started < 10_000);
  });

  test('kill stops the running task and cancels the rest', async () => {
    await saveFlow(b(), WS, 'id: killme\nnamespace: team\ntasks:\n  - id: nap\n    type: sleep\n    duration: PT30S\n  - id: after\n    type: log\n    message: never\n');
    const id = await run(b(), WS, 'team', 'killme');
    for (let i = 0; i < 100; i++) {
      const e = (await b().get(`/workflows/v1/${WS}/executions/${id}`)).json();
      if (e.task_runs[0]?.state === 'RUNNING') break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const k = await b().post(`/workflows/v1/${WS}/executions/${id}/kill`);
    assert.equal(k.statusCode, 202);
    assert.equal(k.json().state, 'KILLING');
    const e = await waitEnded(t, b(), WS, id, 10_000);
    assert.equal(e.state, 'KILLED');
    assert.deepEqual(e.task_runs.map((r: { task_id: string; state: string }) => [r.task_id, r.state]), [['nap', 'KILLED']]);
    assert.equal((await b().post(`/workflows/v1/${WS}/executions/${id}/kill`)).statusCode, 409);
  });

  test('log caps: the task goes on and one warning states how many lines were withheld', async () => {
    const lines = Array.from({ length: 25 }, (_, i) => `"line ${i}"`).join(', ');
    await saveFlow(b(), WS, `id: chatty\nnamespace: team\ntasks:\n  - id: talk\n    type: log\n    message: [${lines}]\n  - id: done\n    type: output\n    values: { ok: true }\n`);
    const e = await waitEnded(t, b(), WS, await run(b(), WS, 'team', 'chatty'));
    assert.equal(e.state, 'SUCCESS');
    const logs = await logsOf(b(), WS, e.id);
    assert.equal(logs.filter((l) => l.line.startsWith('line ')).length, 10);
    const warn = logs.filter((l) => l.level === 'WARN');
    assert.equal(warn.length, 1);
    assert.match(warn[0].line, /^15 log lines withheld/);
  });

  test('secrets: sealed at rest, readable by templates, masked in logs; saving needs workflow:use_secrets', async () => {
    assert.equal((await b().put(`/workflows/v1/${WS}/secrets/API_TOKEN`, { value: 'tok-123-secret' })).statusCode, 204);
    const rows = await t.services.db.selectFrom('workflow_secrets').select('sealed').execute();
    assert.ok(rows.every((r) => !r.sealed.includes('tok-123')));
    assert.deepEqual((await b().get(`/workflows/v1/${WS}/secrets`)).json().secrets.map((s: { name: string }) => s.name), ['API_TOKEN']);
    await saveFlow(b(), WS, `id: usesecret\nnamespace: team\ntasks:\n  - id: o\n    type: output\n    values:\n      len: "{{ secret('API_TOKEN') }}"\n  - id: l\n    type: log\n    message: "token is {{ secret('API_TOKEN') }}"\n`);
    const e = await waitEnded(t, b(), WS, await run(b(), WS, 'team', 'usesecret'));
    assert.equal(e.state, 'SUCCESS', JSON.stringify(e));
    const logs = await logsOf(b(), WS, e.id);
    assert.deepEqual(logs.map((l) => l.line), ['token is ******']);
    assert.deepEqual(e.outputs, { o: { len: '******' } }, 'outputs are stored masked too');

    // An editor may save flows, but not one that reads secrets.
    assert.equal((await b().post('/api/users', { email: 'editor@example.test', password: 'editor-password' })).statusCode, 201);
    assert.equal((await b().post('/api/groups', { name: 'editors' })).statusCode, 201);
    assert.equal((await b().put('/api/groups/editors/members/editor@example.test')).statusCode, 200);
    assert.equal((await b().put(`/api/workspaces/${WS}/members/groups/editors`, { role: 'ws_editor' })).statusCode, 200);
    const editor = new Browser(t, '198.51.100.93');
    assert.equal((await editor.login('editor@example.test', 'editor-password')).statusCode, 200);
    const refused = await editor.request('POST', `/workflows/v1/${WS}/flows`, "id: sneaky\nnamespace: team\ntasks:\n  - id: l\n    type: log\n    message: \"{{ secret('API_TOKEN') }}\"\n", { headers: { 'content-type': 'application/x-yaml' } });
    assert.equal(refused.statusCode, 403);
    assert.match(refused.json().message, /requires workflow:use_secrets/);
    const plain = await editor.request('POST', `/workflows/v1/${WS}/flows`, 'id: plain\nnamespace: team\ntasks:\n  - id: l\n    type: log\n    message: hi\n', { headers: { 'content-type': 'application/x-yaml' } });
    assert.equal(plain.statusCode, 201);
    assert.equal((await editor.put(`/workflows/v1/${WS}/secrets/OTHER`, { value: 'x' })).statusCode, 403, 'secrets are ws_admin business');
    const stored = JSON.stringify(await t.services.db.selectFrom('task_runs').select(['outputs', 'error']).execute());
    assert.ok(!stored.includes('tok-123-secret'));
  });

  test('read() of a namespace file, capped by max_read_bytes', async () => {
    const put = await b().request('PUT', `/workflows/v1/${WS}/namespaces/team/files/content?path=conf/greeting.txt`, Buffer.from('from a file'), { headers: { 'content-type': 'application/octet-stream' } });
    assert.equal(put.statusCode, 200, put.body);
    const big = await b().request('PUT', `/workflows/v1/${WS}/namespaces/team/files/content?path=big.txt`, Buffer.alloc(5000, 97), { headers: { 'content-type': 'application/octet-stream' } });
    assert.equal(big.statusCode, 200);
    assert.deepEqual((await b().get(`/workflows/v1/${WS}/namespaces/team/files`)).json().files.map((f: { path: string }) => f.path).sort(), ['big.txt', 'conf/greeting.txt']);
    await saveFlow(b(), WS, `id: reads\nnamespace: team\ntasks:\n  - id: l\n    type: log\n    message: "{{ read('conf/greeting.txt') }}"\n  - id: big\n    type: log\n    message: "{{ read('big.txt') }}"\n`);
    const e = await waitEnded(t, b(), WS, await run(b(), WS, 'team', 'reads'));
    assert.equal(e.state, 'FAILED');
    assert.equal(e.task_runs[1].error, "read('big.txt'): the file is 5000 bytes, over workflow.storage.max_read_bytes (4096)");
    assert.equal((await logsOf(b(), WS, e.id))[0].line, 'from a file');
  });
});
