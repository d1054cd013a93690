// WebSockets through the apps origin (docs/apps.md "What the proxy passes"): a real subprocess pod
// speaking WebSocket (the `ws` package, as a notebook kernel would) behind the real apps listener,
// reached by a real WebSocket client after the ticket flow. The upgrade needs a live app cookie
// and Origin = apps.origin (cross-site WebSocket hijacking); the pod never sees the app cookie or
// the service's cookies, and gets the session's token and binding as on plain requests. An open
// socket that carried traffic re-checks its token (every RECHECK_MS here instead of 30 s): the
// check counts as use of the token and the pod, and closes the socket once the token has ended;
// a silent socket is not re-checked, and closes when its pod is stopped as idle.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { writeFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import WebSocket from 'ws';
import { APPS_ORIGIN, newApp, openSession, runStopJob, startPodBed, subprocessPods, type PodBed, type SubprocessPods } from './helpers/app-pods.js';
import { APP_COOKIE } from '../src/api/apps-origin.js';
import { podStore } from '../src/apps/pod-runtime.js';
import { podKey } from '../src/apps/pods.js';
import { signInAdmin } from './helpers/workflow.js';

const RECHECK_MS = 150;
// The token idles out after 3600 s unused, 7200 s after minting (startPodBed); a run pod is stopped
// after RUN_IDLE_SECS unused, longer than any clock move below but the last (so the scheduler's
// stop job, should it run meanwhile, stops no pod a test still uses).
const TOKEN_IDLE_MS = 3_600_000;
const RUN_IDLE_SECS = 10_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `check` until it holds, for at most 10 s. */
async function until(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (await check()) return;
    await sleep(25);
  }
  assert.fail(`gave up waiting for ${what}`);
}

/** Sends a frame and waits for the pod's echo of it. */
function echo(socket: WebSocket, text: string): Promise<string> {
  const back = new Promise<string>((resolve) => socket.once('message', (m) => resolve(String(m))));
  socket.send(text);
  return back;
}

// The pod: GET answers "ok"; an upgrade becomes a WebSocket whose first message is the headers the
// pod was given, then it echoes every message.
const wsModule = createRequire(import.meta.url).resolve('ws');
const WS_POD = `import http from 'node:http';
import ws from ${JSON.stringify(wsModule)};
const wss = new ws.WebSocketServer({ noServer: true });
const server = http.createServer((req, res) => res.end('ok'));
server.on('upgrade', (req, socket, head) => wss.handleUpgrade(req, socket, head, (c) => {
  c.send(JSON.stringify({ url: req.url, headers: req.headers }));
  c.on('message', (m) => c.send(String(m)));
}));
server.listen(Number(process.env.SVC_APP_PORT), process.env.SVC_APP_HOST);
`;

interface Opened { socket: WebSocket; first: { url: string; headers: Record<string, string> } }
type Refused = { status: number; body: { error: string; message: string } };

/** Opens a WebSocket to the apps listener; resolves with its first message, or the refusal. */
function connect(base: string, path: string, headers: Record<string, string>): Promise<Opened | Refused> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(`${base}${path}`, { headers });
    socket.once('message', (m) => resolve({ socket, first: JSON.parse(String(m)) }));
    socket.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (c: Buffer) => { body += c.toString(); });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(body) }));
    });
    socket.once('error', reject);
  });
}

describe('WebSockets to an app pod through the apps origin', () => {
  let pods: SubprocessPods;
  let b: PodBed;
  let base: string;
  let token: string;
  before(async () => {
    pods = await subprocessPods();
    const program = path.join(pods.root, 'ws-pod.mjs');
    await writeFile(program, WS_POD);
    b = await startPodBed({ ...pods.env, SVC_APPS__POD__COMMAND: JSON.stringify([process.execPath, program]), SVC_APPS__POD__RUN_IDLE_SECS: String(RUN_IDLE_SECS) },
      undefined, { wsRecheckMs: RECHECK_MS });
    await b.origin.listen({ host: '127.0.0.1', port: 0 });
    const { port } = b.origin.server.address() as { port: number };
    base = `ws://127.0.0.1:${port}`;
    token = await openSession(b.admin, b.origin, await newApp(b.admin, 'kernel', 'x = 1\n'));
  });
  after(async () => { await b.close(); await rm(pods.root, { recursive: true, force: true }); });

  test('with the app cookie and the apps origin: frames go both ways, the pod sees the token and no cookie of ours', async () => {
    const cookie = `${APP_COOKIE}=${token}; svc_session=s3cr3t; theme=dark`;
    const r = await connect(base, '/ws/kernel?session=1', { cookie, origin: APPS_ORIGIN, 'x-svc-app-id': 'forged' });
    assert.ok('socket' in r, JSON.stringify(r));
    const { socket, first } = r;
    assert.equal(first.url, '/ws/kernel?session=1');
    assert.equal(first.headers['x-svc-app-token'], token);
    assert.notEqual(first.headers['x-svc-app-id'], 'forged', 'a client never sets the binding headers');
    assert.equal(first.headers['x-svc-app-mode'], 'run');
    assert.equal(first.headers.cookie, 'theme=dark', 'neither the app cookie nor the service session reach the pod');
    const echoed = new Promise<string>((resolve) => socket.once('message', (m) => resolve(String(m))));
    socket.send('2 + 2');
    assert.equal(await echoed, '2 + 2');
    socket.close();
  });

  test('another origin is refused: 403 in the error body (cross-site WebSocket hijacking)', async () => {
    const r = await connect(base, '/ws', { cookie: `${APP_COOKIE}=${token}`, origin: 'https://evil.example' });
    assert.deepEqual(r, { status: 403, body: { error: 'forbidden', message: 'a WebSocket to an app must come from the apps origin' } });
  });

  test('without a live app cookie: 401; the service\'s own paths never upgrade', async () => {
    assert.deepEqual(await connect(base, '/ws', { origin: APPS_ORIGIN }),
      { status: 401, body: { error: 'unauthorized', message: 'no app session: open the app again from the service' } });
    assert.equal(((await connect(base, '/ws', { origin: APPS_ORIGIN, cookie: `${APP_COOKIE}=not-a-token` })) as Refused).status, 401);
    assert.equal(((await connect(base, '/_svc/session', { origin: APPS_ORIGIN, cookie: `${APP_COOKIE}=${token}` })) as Refused).status, 404);
  });

  // The tests below move the service's clock, so they come last and each opens its own app (its
  // own run pod) and session.

  /** A new app, a session on it and an open WebSocket to its pod; the pod's record and the token's liveness. */
  async function openKernel(name: string) {
    const admin = await signInAdmin(b.t); // again: the moved clock ended the earlier service session
    const appId = await newApp(admin, name, 'x = 1\n');
    const appToken = await openSession(admin, b.origin, appId);
    const r = await connect(base, '/ws', { cookie: `${APP_COOKIE}=${appToken}`, origin: APPS_ORIGIN });
    assert.ok('socket' in r, JSON.stringify(r));
    const { socket } = r;
    let closed = false;
    socket.on('close', () => { closed = true; });
    const key = podKey({ mode: 'run', appId, version: Number(r.first.headers['x-svc-app-version']), workspaceId: '', userId: '' });
    return {
      socket, isClosed: () => closed,
      pod: () => podStore(b.t.services).get(key),
      tokenStatus: async () => (await b.origin.inject({ method: 'GET', url: '/_svc/session', cookies: { [APP_COOKIE]: appToken } })).statusCode,
    };
  }

  /**
   * Sends a frame, then moves the clock 1 s and waits for the re-check recording that time as the
   * pod's use: it consumed all the socket's traffic so far. Answers that time.
   */
  async function checked(k: Awaited<ReturnType<typeof openKernel>>): Promise<number> {
    assert.equal(await echo(k.socket, 'x'), 'x');
    b.t.clock.advance(1_000);
    const at = b.t.clock.now().getTime();
    await until(async () => (await k.pod())?.used === at, 'the re-check of the traffic so far');
    return at;
  }

  test('a socket carrying traffic is re-checked: the check counts as use of the token and the pod, and the socket stays open', async () => {
    const k = await openKernel('busy-kernel');
    assert.equal(await echo(k.socket, 'x + 1'), 'x + 1');
    b.t.clock.advance(TOKEN_IDLE_MS / 2 + 200_000);
    const checkedAt = b.t.clock.now().getTime();
    await until(async () => (await k.pod())?.used === checkedAt, 'the re-check to count as use of the pod');
    assert.equal(await echo(k.socket, 'x + 2'), 'x + 2', 'a re-check of a live token keeps the socket open');
    // 4000 s after the session was opened, 2000 s after the re-check: only the re-check's use keeps the token alive.
    b.t.clock.advance(TOKEN_IDLE_MS / 2 + 200_000);
    assert.equal(await k.tokenStatus(), 200, 'the re-check counted as use of the token');
    const again = b.t.clock.now().getTime();
    assert.equal(await echo(k.socket, 'x + 3'), 'x + 3');
    await until(async () => (await k.pod())?.used === again, 'the next re-check');
    assert.equal(await echo(k.socket, 'x + 4'), 'x + 4');
    assert.equal(k.isClosed(), false);
    k.socket.close();
  });

  test('once the token has ended, the next re-check of a socket with traffic closes it (its pod stays)', async () => {
    const k = await openKernel('ending-kernel');
    const before = (await k.pod())!;
    b.t.clock.advance(TOKEN_IDLE_MS + 1_000);
    k.socket.send('one more cell');
    await until(k.isClosed, 'the re-check to close the socket of an ended token');
    assert.equal((await k.pod())?.id, before.id, 'the proxy closed the socket: its pod was not stopped');
    assert.equal(await k.tokenStatus(), 401);
  });

  test('a silent socket is not re-checked: it outlives its token until it carries traffic again, or its pod stops as idle', async () => {
    const k = await openKernel('quiet-kernel');
    const lastCheck = await checked(k);
    b.t.clock.advance(TOKEN_IDLE_MS + 1_000);
    await sleep(10 * RECHECK_MS);
    assert.equal(k.isClosed(), false, 'no re-check ran on the silent socket');
    assert.equal((await k.pod())?.used, lastCheck, 'a silent socket counts as no use of the pod');
    assert.equal(await k.tokenStatus(), 401, 'the token has ended meanwhile');
    k.socket.send('wake up');
    await until(k.isClosed, 'the re-check of the socket that carried traffic again');

    // A socket that stays silent is closed by its pod's idle stop.
    const quiet = await openKernel('idle-kernel');
    await checked(quiet);
    b.t.clock.advance(RUN_IDLE_SECS * 1000 + 1_000);
    await sleep(2 * RECHECK_MS);
    assert.equal(quiet.isClosed(), false);
    await runStopJob(b.t);
    await until(quiet.isClosed, 'the idle stop of the pod to close its silent socket');
    assert.equal(await quiet.pod(), null, 'the pod was stopped as idle');
  });
});
