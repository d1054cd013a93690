// WebSockets through the apps origin (docs/apps.md "What the proxy passes"): a real subprocess pod
// speaking WebSocket (the `ws` package, as a notebook kernel would) behind the real apps listener,
// reached by a real WebSocket client after the ticket flow. The upgrade needs a live app cookie
// and Origin = apps.origin (cross-site WebSocket hijacking); the pod never sees the app cookie or
// the service's cookies, and gets the session's token and binding as on plain requests.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { writeFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import WebSocket from 'ws';
import { APPS_ORIGIN, newApp, openSession, startPodBed, subprocessPods, type PodBed, type SubprocessPods } from './helpers/app-pods.js';
import { APP_COOKIE } from '../src/api/apps-origin.js';

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
    b = await startPodBed({ ...pods.env, SVC_APPS__POD__COMMAND: JSON.stringify([process.execPath, program]) });
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
});
