// Script and plugin tasks run for real in containers through the local_container runner on the
// podman engine (ENVIRONMENT.md), with the workspace switches, allowed images and types enforced.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { startTestAppWithS3, Browser, type TestApp } from './helpers/app.js';
import { initAdministrator } from '../src/bootstrap/init.js';
import { startWorkflowWorker, type WorkflowWorker } from '../src/jobs/workflow-worker.js';
import { ensurePodman } from './helpers/podman.js';
import { saveFlow, run, waitEnded, logsOf } from './helpers/workflows.js';

const exec = promisify(execFile);
const PLUGIN_HOST = 'localhost/svc-plugin-host:test';
let t: TestApp; let worker: WorkflowWorker; let b: Browser;
const WS = 'default';

before(async () => {
  const host = await ensurePodman();
  await exec('podman', ['build', '-q', '-t', PLUGIN_HOST, fileURLToPath(new URL('./fixtures/plugin-host/', import.meta.url))]);
  t = await startTestAppWithS3({
    SVC_WORKFLOW__WORKER_ENABLED: 'true', SVC_WORKFLOW__KILL_POLL_MS: '100',
    SVC_WORKFLOW__CONTAINER_RUNNER: 'local_container', SVC_ENGINES__LOCAL_CONTAINER__HOST: host,
    SVC_WORKFLOW__PLUGIN_HOST__IMAGE: PLUGIN_HOST, SVC_WORKFLOW__PLUGIN_HOST__KILL_GRACE_S: '3',
    SVC_WORKFLOW__STORAGE__MAX_FILE_BYTES: '1000', SVC_WORKFLOW__STORAGE__MAX_TASK_BYTES: '1500', SVC_WORKFLOW__STORAGE__MAX_NAMESPACE_FILES: '3',
    SVC_WORKFLOW__PLUGIN_CONFIGURATIONS: '[{type="script", values={"allowed-images"=["localhost/svc-test:*"]}}, {type="plugins", values={"allowed-types"=["io.test.*"]}}]',
  });
  await initAdministrator(t.services.db, { email: 'admin@example.test', password: 'admin-password-1', force: false });
  b = new Browser(t, '198.51.100.91');
  assert.equal((await b.login('admin@example.test', 'admin-password-1')).statusCode, 200);
  worker = await startWorkflowWorker(t.services);
});
after(async () => { await worker?.close(); await t?.close(); });

const SCRIPT = `
id: script
namespace: team
inputs:
  - id: who
    defaults: world
tasks:
  - id: sh
    type: script
    image: localhost/svc-test:1
    env:
      WHO: "{{ inputs.who }}"
    inputFiles:
      in.txt: "input for {{ inputs.who }}"
    outputFiles: ["out.txt"]
    commands:
      - echo "hello $WHO"
      - echo "to stderr" >&2
      - cat in.txt > out.txt
      - echo " attempt {{ taskrun.attempt }}" >> out.txt
`;

describe('script tasks', () => {
  test('refused while the workspace switch workflow_containers is off', async () => {
    await saveFlow(b, WS, SCRIPT);
    const e = await waitEnded(t, b, WS, await run(b, WS, 'team', 'script'));
    assert.equal(e.state, 'FAILED');
    assert.match(e.task_runs[0].error, /turn on the workflow_containers switch/);
  });

  test('runs in a real container: env, input and output files, stdout and stderr logs', async () => {
    assert.equal((await b.request('PATCH', `/api/workspaces/${WS}`, { workflow_containers: true, workflow_plugins: true })).statusCode, 200);
    const e = await waitEnded(t, b, WS, await run(b, WS, 'team', 'script', { who: 'ada' }), 60_000);
    assert.equal(e.state, 'SUCCESS', JSON.stringify(e.task_runs));
    const logs = await logsOf(b, WS, e.id);
    assert.deepEqual(logs.map((l) => [l.level, l.line]), [['INFO', 'hello ada'], ['WARN', 'to stderr']]);
    const files = (await b.get(`/workflows/v1/${WS}/executions/${e.id}/files`)).json().files;
    assert.equal(files.length, 1);
    const dl = await b.get(`/workflows/v1/${WS}/executions/${e.id}/files/download?path=${encodeURIComponent(files[0].path)}`);
    assert.equal(dl.statusCode, 200);
    assert.equal(dl.body, 'input for ada attempt 1\n');
    assert.equal(e.task_runs[0].outputs.exitCode, 0);
  });

  test('a failing command fails the task; retried attempts see taskrun.attempt', async () => {
    await saveFlow(b, WS, `
id: flaky
namespace: team
tasks:
  - id: sh
    type: script
    image: localhost/svc-test:1
    retry: { maxAttempts: 2 }
    script: |
      echo "attempt {{ taskrun.attempt }}"
      test {{ taskrun.attempt }} -ge 2
`);
    const e = await waitEnded(t, b, WS, await run(b, WS, 'team', 'flaky'), 60_000);
    assert.equal(e.state, 'SUCCESS', JSON.stringify(e.task_runs));
    assert.equal(e.task_runs[0].attempt, 2);
    const logs = (await logsOf(b, WS, e.id)).map((l) => [l.attempt, l.line]);
    assert.deepEqual(logs.filter(([, line]) => String(line).startsWith('attempt')), [[1, 'attempt 1'], [2, 'attempt 2']]);
    assert.ok(logs.some(([a, line]) => a === 1 && /exited with code 1/.test(String(line))));
  });

  test('an image outside allowed-images is refused; an output file over max_file_bytes fails the task', async () => {
    await saveFlow(b, WS, 'id: badimage\nnamespace: team\ntasks:\n  - id: sh\n    type: script\n    image: docker.io/library/alpine:3\n    commands: ["true"]\n');
    const e = await waitEnded(t, b, WS, await run(b, WS, 'team', 'badimage'));
    assert.equal(e.state, 'FAILED');
    assert.match(e.task_runs[0].error, /image docker\.io\/library\/alpine:3 is not allowed/);
    await saveFlow(b, WS, 'id: bigfile\nnamespace: team\ntasks:\n  - id: sh\n    type: script\n    image: localhost/svc-test:1\n    outputFiles: [big.bin]\n    commands: ["seq 1 1000 > big.bin"]\n');
    const f = await waitEnded(t, b, WS, await run(b, WS, 'team', 'bigfile'), 60_000);
    assert.equal(f.state, 'FAILED');
    assert.match(f.task_runs[0].error, /output file big\.bin is \d+ bytes, over workflow\.storage\.max_file_bytes \(1000\)/);
  });

  test('output files together over max_task_bytes fail the task', async () => {
    await saveFlow(b, WS, 'id: twofiles\nnamespace: team\ntasks:\n  - id: sh\n    type: script\n    image: localhost/svc-test:1\n    outputFiles: [a.txt, b.txt]\n    commands: ["seq 1 220 > a.txt", "seq 1 220 > b.txt"]\n');
    const e = await waitEnded(t, b, WS, await run(b, WS, 'team', 'twofiles'), 60_000);
    assert.equal(e.state, 'FAILED');
    assert.equal(e.task_runs[0].error, 'output files total over workflow.storage.max_task_bytes (1500)');
    // the first file was uploaded while it was read; the failed attempt removes it again
    assert.deepEqual((await b.get(`/workflows/v1/${WS}/executions/${e.id}/files`)).json().files, []);
  });

  test('namespace files: max_file_bytes answers 413, max_namespace_files caps the count', async () => {
    const put = (path: string, size: number) => b.request('PUT', `/workflows/v1/${WS}/namespaces/caps/files/content?path=${path}`, Buffer.alloc(size, 120), { headers: { 'content-type': 'application/octet-stream' } });
    const big = await put('big.bin', 1001);
    assert.equal(big.statusCode, 413, big.body);
    assert.match(big.json().message, /over 1000 bytes/);
    for (const n of [1, 2, 3]) assert.equal((await put(`f${n}.txt`, 10)).statusCode, 200);
    const fourth = await put('f4.txt', 10);
    assert.equal(fourth.statusCode, 400);
    assert.match(fourth.json().message, /already holds 3 files/);
    assert.equal((await put('f1.txt', 20)).statusCode, 200, 'replacing an existing file is not a new one');
    const list = (await b.get(`/workflows/v1/${WS}/namespaces/caps/files`)).json();
    assert.equal(list.files.length, 3);
    assert.equal(list.truncated, false);
  });

  test('a script over its timeout is stopped (container default timeout applies when none is declared)', async () => {
    await saveFlow(b, WS, 'id: slowsh\nnamespace: team\ntasks:\n  - id: sh\n    type: script\n    image: localhost/svc-test:1\n    timeout: PT1S\n    commands: ["sleep 30"]\n');
    const started = Date.now();
    const e = await waitEnded(t, b, WS, await run(b, WS, 'team', 'slowsh'), 60_000);
    assert.equal(e.state, 'FAILED');
    assert.match(e.task_runs[0].error, /timed out after 1 s/);
    assert.ok(Date.now() - started < 30_000);
  });
});

describe('plugin tasks', () => {
  test('run in plugin_host.image: task.json in, outputs.json out', async () => {
    await saveFlow(b, WS, 'id: plug\nnamespace: team\ntasks:\n  - id: p\n    type: io.test.Echo\n    url: "https://example.test/{{ flow.id }}"\n');
    const e = await waitEnded(t, b, WS, await run(b, WS, 'team', 'plug'), 60_000);
    assert.equal(e.state, 'SUCCESS', JSON.stringify(e.task_runs));
    assert.deepEqual(e.task_runs[0].outputs, { type: 'io.test.Echo', ok: true });
    const lines = (await logsOf(b, WS, e.id)).map((l) => l.line);
    assert.equal(lines[0], 'plugin host running io.test.Echo');
    assert.match(lines[1], /"url":"https:\/\/example\.test\/plug"/);
  });

  test('a type outside allowed-types is refused', async () => {
    await saveFlow(b, WS, 'id: plugbad\nnamespace: team\ntasks:\n  - id: p\n    type: com.other.Thing\n');
    const e = await waitEnded(t, b, WS, await run(b, WS, 'team', 'plugbad'));
    assert.equal(e.state, 'FAILED');
    assert.match(e.task_runs[0].error, /task type com\.other\.Thing is not allowed/);
  });

  test('a timed-out plugin task ignoring SIGTERM is killed after kill_grace_s', async () => {
    await saveFlow(b, WS, 'id: plugslow\nnamespace: team\ntasks:\n  - id: p\n    type: io.test.Sleep\n    timeout: PT1S\n');
    const started = Date.now();
    const e = await waitEnded(t, b, WS, await run(b, WS, 'team', 'plugslow'), 60_000);
    const took = Date.now() - started;
    assert.equal(e.state, 'FAILED');
    assert.match(e.task_runs[0].error, /timed out/);
    assert.ok(took >= 3_000 && took < 30_000, `stopped after the grace period: ${took} ms`);
  });
});
