// App pods with the subprocess launcher (docs/apps.md "Pods"): a real process (the test's own
// small HTTP program as apps.pod.command) launched by the `app-pods` job, reached through the apps
// origin after the ticket flow, given only its SVC_APP_* environment, stopped by the stop job
// after its idle time on a moved clock; a full run pod answers a new session 503; a pod that
// never answers is a 504 after apps.pod.ready_timeout_secs. Real PostgreSQL, Redis, S3, processes.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { existsSync, statSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { signInAdmin } from './helpers/workflow.js';
import { SERVICE_ORIGIN as SERVICE, jobDone, newApp, openSession, runStopJob, startPodBed, subprocessPods, type PodBed, type SubprocessPods } from './helpers/app-pods.js';
import { APP_COOKIE } from '../src/api/apps-origin.js';
import { podStore } from '../src/apps/pod-runtime.js';
import { admitsSession, isIdle, podKey } from '../src/apps/pods.js';

/** A bed on the subprocess launcher; its close() also removes the pods' directories. */
async function bed(pods: SubprocessPods, proxyIdleMs?: number): Promise<PodBed> {
  const b = await startPodBed(pods.env, undefined, { proxyIdleMs });
  return { ...b, async close() { await b.close(); await rm(pods.root, { recursive: true, force: true }); } };
}

const alive = (pid: number) => { try { process.kill(pid, 0); return true; } catch { return false; } };

describe('the pod rules', () => {
  test('an edit pod is one per author per workspace, a run pod one per published version', () => {
    const b = { workspaceId: 'w', userId: 'u', appId: 'a', version: 3 };
    assert.equal(podKey({ ...b, mode: 'edit' }), 'edit-w-u');
    assert.equal(podKey({ ...b, appId: 'other', mode: 'edit' }), 'edit-w-u', 'another app of the same author shares the edit pod');
    assert.equal(podKey({ ...b, mode: 'run' }), 'run-a-3');
    assert.notEqual(podKey({ ...b, version: 4, mode: 'run' }), 'run-a-3');
    assert.throws(() => podKey({ ...b, version: null, mode: 'run' }));
  });

  test('idle is strictly past idle_secs (edit) or run_idle_secs (run); only run pods are capped', () => {
    const l = { idleSecs: 60, runIdleSecs: 10 };
    assert.equal(isIdle('edit', 0, 60_000, l), false);
    assert.equal(isIdle('edit', 0, 60_001, l), true);
    assert.equal(isIdle('run', 0, 10_001, l), true);
    assert.equal(admitsSession('run', 2, 2, false), false);
    assert.equal(admitsSession('run', 2, 2, true), true, 'a seated session is never refused');
    assert.equal(admitsSession('run', 1, 2, false), true);
    assert.equal(admitsSession('edit', 99, 2, false), true);
  });
});

describe('subprocess app pods', () => {
  let pods: SubprocessPods;
  let b: PodBed;
  let appId: string;
  before(async () => {
    pods = await subprocessPods({ SVC_APPS__POD__IDLE_SECS: '600', SVC_APPS__POD__RUN_IDLE_SECS: '120', SVC_APPS__POD__RUN_SESSION_CAP: '2' });
    b = await bed(pods, 3000);
    appId = await newApp(b.admin, 'sales', 'x = 1  # version 1\n');
  });
  after(() => b.close());

  const get = (token: string, url = '/', extra: Record<string, string> = {}) =>
    b.origin.inject({ method: 'GET', url, headers: { cookie: `${APP_COOKIE}=${token}; theme=dark`, ...extra } });

  test('a run session reaches a launched pod through the apps origin, which passes only what the pod needs', async () => {
    assert.equal((await b.origin.inject({ method: 'GET', url: '/' })).statusCode, 401, 'no cookie, no app');
    const token = await openSession(b.admin, b.origin, appId);
    const res = await get(token, '/page?x=1', { 'x-svc-app-id': 'forged' });
    assert.equal(res.statusCode, 200, res.body);
    const seen = res.json();
    assert.equal(seen.url, '/page?x=1');
    assert.equal(seen.source, 'x = 1  # version 1\n', 'the published version');
    assert.equal(seen.env.SVC_APP_MODE, 'run');
    assert.equal(seen.env.SVC_APP_VERSION, '1');
    assert.equal(seen.env.SVC_APP_ID, appId);
    assert.equal(seen.env.SVC_APP_KERNEL_MODE, 'thread');
    assert.equal(seen.env.SVC_APP_CALLBACK_URL, 'http://127.0.0.1:9/svc');
    assert.equal(seen.env.SVC_APP_VENV_SHIM_DIR, pods.shimDir);
    assert.ok(seen.env.PATH.startsWith(`${pods.shimDir}:`), 'a run pod finds the venv shims first');
    assert.deepEqual(Object.keys(seen.env).filter((k) => k.startsWith('SVC_') && !k.startsWith('SVC_APP_')), [], 'none of the service\'s own variables');
    assert.equal(path.dirname(seen.cwd), pods.workDir, 'its own working directory under apps.pod.work_dir');
    // config_dir: a per-pod read-only copy; the shared directory is never handed over.
    assert.equal(path.dirname(seen.env.SVC_APP_CONFIG_DIR), seen.cwd);
    assert.equal(seen.env.XDG_CONFIG_HOME, seen.env.SVC_APP_CONFIG_DIR);
    assert.equal(statSync(path.join(seen.env.SVC_APP_CONFIG_DIR, 'marimo', 'marimo.toml')).mode & 0o777, 0o444);
    assert.equal(statSync(seen.env.SVC_APP_CONFIG_DIR).mode & 0o777, 0o555);
    assert.match(readFileSync(path.join(seen.env.SVC_APP_CONFIG_DIR, 'marimo', 'marimo.toml'), 'utf8'), /auto_instantiate/);
    // The cookie stays on the apps origin; the pod gets the token and binding as headers it alone sets.
    assert.equal(seen.headers.cookie, 'theme=dark');
    assert.equal(seen.headers['x-svc-app-token'], token);
    assert.equal(seen.headers['x-svc-app-id'], appId, 'a client cannot forge the binding headers');
    assert.equal(seen.headers['x-svc-app-mode'], 'run');
    assert.deepEqual(res.headers['set-cookie'], ['pod=1; Path=/'], 'a pod never sets the app cookie, the service\'s cookies, nor one for the parent domain');
    assert.equal(res.headers['content-security-policy'], `default-src 'self'; frame-ancestors ${SERVICE}`, 'only the service frames the app, whatever the pod says');

    const post = await b.origin.inject({ method: 'POST', url: '/api/cell', headers: { cookie: `${APP_COOKIE}=${token}`, 'content-type': 'application/json' }, payload: { code: 'y = 2' } });
    assert.equal(post.statusCode, 200, post.body);
    assert.equal(post.json().body, '{"code":"y = 2"}', 'bodies pass through unparsed');
    assert.equal(post.json().pid, seen.pid, 'the same pod serves the session');
    assert.equal((await get(token, '/_svc/nope')).statusCode, 404, '/_svc/ stays the origin\'s own');
  });

  test('a run pod serving apps.pod.run_session_cap sessions answers a new session 503', async () => {
    const other = await newApp(b.admin, 'capped', 'y = 2\n');
    const s1 = await openSession(b.admin, b.origin, other);
    const s2 = await openSession(b.admin, b.origin, other);
    const s3 = await openSession(b.admin, b.origin, other);
    assert.equal((await get(s1)).statusCode, 200);
    assert.equal((await get(s2)).statusCode, 200);
    const full = await get(s3);
    assert.equal(full.statusCode, 503, full.body);
    assert.deepEqual(full.json(), { error: 'unavailable', message: 'this app already serves 2 sessions (apps.pod.run_session_cap): try again later' });
    assert.equal((await get(s1)).statusCode, 200, 'seated sessions go on');
    // A session unused past apps.session_idle_secs gives its seat up.
    b.t.clock.advance(3_601_000);
    b.admin = await signInAdmin(b.t); // the service session ended with the moved clock too
    const s4 = await openSession(b.admin, b.origin, other);
    assert.equal((await get(s4)).statusCode, 200);
  });

  test('a pod unused past run_idle_secs is stopped by the stop job; the next request launches another', async () => {
    const token = await openSession(b.admin, b.origin, appId);
    const first = (await get(token)).json();
    assert.ok(alive(first.pid));
    b.t.clock.advance(119_000);
    await runStopJob(b.t);
    assert.ok(alive(first.pid), 'used 119 s ago: still running');
    assert.equal((await get(token)).json().pid, first.pid, 'and a use makes it fresh');
    b.t.clock.advance(121_000);
    await runStopJob(b.t);
    assert.ok(!alive(first.pid), 'stopped after run_idle_secs unused');
    assert.ok(!existsSync(first.cwd), 'its working directory is removed');
    const again = await get(token);
    assert.equal(again.statusCode, 200, again.body);
    assert.notEqual(again.json().pid, first.pid, 'a fresh pod');
  });

  test('edit sessions of one author share an edit pod (idle_secs), which gets each app\'s draft', async () => {
    b.admin = await signInAdmin(b.t);
    const one = await newApp(b.admin, 'draft-one', 'a = 1  # draft\n', false);
    const two = await newApp(b.admin, 'draft-two', 'b = 2  # draft\n', false);
    const e1 = (await get(await openSession(b.admin, b.origin, one, 'edit'))).json();
    assert.equal(e1.env.SVC_APP_MODE, 'edit');
    assert.equal(e1.env.SVC_APP_VERSION, '');
    assert.equal(e1.source, 'a = 1  # draft\n');
    assert.equal(e1.env.SVC_APP_VENV_SHIM_DIR, undefined, 'the shims are for run pods');
    const e2 = (await get(await openSession(b.admin, b.origin, two, 'edit'))).json();
    assert.equal(e2.pid, e1.pid, 'one edit pod per author per workspace');
    assert.deepEqual(e2.files, ['draft-one.py', 'draft-two.py']);
    assert.equal(readFileSync(path.join(e2.env.SVC_APP_SOURCE_DIR, 'draft-two.py'), 'utf8'), 'b = 2  # draft\n');
    b.t.clock.advance(590_000);
    await runStopJob(b.t);
    assert.ok(alive(e1.pid), 'an edit pod outlives run_idle_secs');
    b.t.clock.advance(20_000);
    await runStopJob(b.t);
    assert.ok(!alive(e1.pid), 'and stops after idle_secs');
  });

  test('a pod silent on a request past the proxy\'s idle timeout is a 504; the pod keeps serving', async () => {
    const token = await openSession(b.admin, b.origin, appId);
    const res = await get(token, '/_hang');
    assert.equal(res.statusCode, 504, res.body);
    assert.deepEqual(res.json(), { error: 'timeout', message: 'the app did not answer within 3 s' });
    assert.equal((await get(token, '/after')).json().url, '/after');
  });

  test('an edit pod saves the draft with its edit session\'s token; a run token, an ended one or none cannot', async () => {
    const notes = await newApp(b.admin, 'notes', 'n = 1\n', false);
    // The token as the pod receives it from the proxy.
    const podToken = (await get(await openSession(b.admin, b.origin, notes, 'edit'))).json().headers['x-svc-app-token'];
    const save = (headers: Record<string, string>, source: string) => b.t.app.inject({ method: 'PUT', url: '/api/apps/draft', headers, payload: { source } });
    const draft = async () => (await b.admin.browser.get(`/api/workspaces/default/apps/${notes}/draft`)).json().source;
    const res = await save({ 'x-svc-app-token': podToken }, 'n = 2\n');
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().id, notes);
    assert.equal(await draft(), 'n = 2\n');

    const runToken = await openSession(b.admin, b.origin, appId);
    assert.deepEqual((await save({ 'x-svc-app-token': runToken }, 'x')).json(), { error: 'forbidden', message: 'only an edit session saves the draft' });
    assert.deepEqual((await save({ 'x-svc-app-token': 'not-a-token' }, 'x')).json(), { error: 'unauthorized', message: 'no app session: the app token has ended' });
    assert.deepEqual((await save({}, 'x')).json(), { error: 'unauthorized', message: 'an X-Svc-App-Token header is required' });
    assert.equal(await draft(), 'n = 2\n', 'nothing refused was written');
  });

  test('deleting an app stops its run pod at once; its open sessions are then a 503', async () => {
    const doomed = await newApp(b.admin, 'doomed', 'd = 1\n');
    const token = await openSession(b.admin, b.origin, doomed);
    const first = (await get(token)).json();
    assert.ok(alive(first.pid));
    assert.equal((await b.admin.browser.delete(`/api/workspaces/default/apps/${doomed}`)).statusCode, 204);
    await jobDone(b.t, `stop-app-${doomed}`);
    assert.ok(!alive(first.pid), 'the run pod is stopped without waiting for run_idle_secs');
    assert.ok(!existsSync(first.cwd));
    const after = await get(token);
    assert.equal(after.statusCode, 503, after.body);
    assert.deepEqual(after.json(), { error: 'unavailable', message: 'the app could not start: it was deleted' });
  });

  test('a pod whose process exits before it answers is a 503 with a message', async () => {
    const broken = await newApp(b.admin, 'broken', '# POD: exit\n');
    const res = await get(await openSession(b.admin, b.origin, broken));
    assert.equal(res.statusCode, 503, res.body);
    assert.deepEqual(res.json(), { error: 'unavailable', message: "the app could not start: the app's process exited (code 3) before it answered" });
  });
});

describe('subprocess app pods: the ready timeout', () => {
  let b: PodBed;
  before(async () => { b = await bed(await subprocessPods({ SVC_APPS__POD__READY_TIMEOUT_SECS: '2' })); });
  after(() => b.close());

  test('a pod that never answers is a 504 after apps.pod.ready_timeout_secs, and is stopped', async () => {
    const silent = await newApp(b.admin, 'silent', '# POD: silent\n');
    const token = await openSession(b.admin, b.origin, silent);
    const res = await b.origin.inject({ method: 'GET', url: '/', cookies: { [APP_COOKIE]: token } });
    assert.equal(res.statusCode, 504, res.body);
    assert.deepEqual(res.json(), { error: 'timeout', message: 'the app did not start within 2 s (apps.pod.ready_timeout_secs): open it again in a moment' });
    // The launch job gives up on its own clock too: the process is stopped and the pod recorded failed.
    const key = `run-${silent}-1`;
    let rec;
    for (let i = 0; i < 100; i++) {
      rec = await podStore(b.t.services).get(key);
      if (rec?.state === 'failed') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(rec?.state, 'failed');
    assert.equal(rec?.handle, undefined, 'nothing left running');
  });
});
