// The apps origin is no open proxy (issue 24 point 7): the upstream of every request and WebSocket
// upgrade is the session's pod, and the request target is only ever its path. A target naming
// another host (`//host:port/`, `/\host/`, absolute-form `http://host/`), authority-form
// (`CONNECT host:port`) and `*` are a 400 in the one error shape, before any pod is asked. A second
// local server stands where such a target points and must receive nothing: no connection at all.
// Real subprocess pod, real apps listener on a socket, real PostgreSQL, Redis and S3.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { rm } from 'node:fs/promises';
import { APPS_ORIGIN, newApp, openSession, startPodBed, subprocessPods, type PodBed, type SubprocessPods } from './helpers/app-pods.js';
import { APP_COOKIE } from '../src/api/apps-origin.js';
import { NOT_ORIGIN_FORM, isOriginForm, podRequestTarget } from '../src/apps/pods.js';

test('origin-form targets only; the upstream host and port are always the pod\'s', () => {
  for (const ok of ['/', '/page?x=1', '/a//b', '/%2F%2Fhost/', '/?next=//host/']) assert.equal(isOriginForm(ok), true, ok);
  for (const bad of ['', '*', '//host:1/x', '/\\host/x', 'http://host/x', 'host:443', '\\\\host/x']) assert.equal(isOriginForm(bad), false, bad);
  assert.deepEqual(podRequestTarget('http://127.0.0.1:4100', '/a?b=1'), { protocol: 'http:', hostname: '127.0.0.1', port: '4100', path: '/a?b=1' });
  assert.deepEqual(podRequestTarget('http://[fd00::7]:8080', '/'), { protocol: 'http:', hostname: 'fd00::7', port: '8080', path: '/' });
  assert.equal(podRequestTarget('http://127.0.0.1:4100', '//127.0.0.1:9/x'), null);
});

describe('request targets on the apps listener', () => {
  let pods: SubprocessPods;
  let b: PodBed;
  let port: number;
  let token: string;
  /** The second server: where a request target other than a path would send the viewer's request. */
  const decoy = { server: http.createServer((_req, res) => res.end('secret of another host')), connections: 0, requests: [] as http.IncomingHttpHeaders[] };
  let there: string;

  before(async () => {
    decoy.server.on('connection', () => { decoy.connections += 1; });
    decoy.server.on('request', (req) => { decoy.requests.push(req.headers); });
    await new Promise<void>((r) => decoy.server.listen(0, '127.0.0.1', r));
    there = `127.0.0.1:${(decoy.server.address() as AddressInfo).port}`;
    pods = await subprocessPods();
    b = await startPodBed(pods.env);
    await b.origin.listen({ host: '127.0.0.1', port: 0 });
    port = (b.origin.server.address() as AddressInfo).port;
    token = await openSession(b.admin, b.origin, await newApp(b.admin, 'target', 'x = 1\n'));
  });
  after(async () => {
    await b.close();
    await rm(pods.root, { recursive: true, force: true });
    decoy.server.closeAllConnections();
    await new Promise<void>((r) => decoy.server.close(() => r()));
  });

  /** A request to the apps listener with `target` sent as is on the request line. */
  function send(method: string, target: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string; upgraded: boolean }> {
    return new Promise((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port, method, path: target, headers: { host: new URL(APPS_ORIGIN).host, cookie: `${APP_COOKIE}=${token}`, ...headers } });
      req.on('response', (res) => {
        let body = '';
        res.on('data', (c: Buffer) => { body += c.toString(); });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, upgraded: false }));
      });
      req.on('upgrade', (res, socket) => { socket.destroy(); resolve({ status: res.statusCode ?? 0, body: '', upgraded: true }); });
      req.on('error', reject);
      req.end();
    });
  }
  const refusal = JSON.stringify({ error: 'bad_request', message: NOT_ORIGIN_FORM });

  test('a path reaches the pod (the session works)', async () => {
    const res = await send('GET', '/page?x=1');
    assert.equal(res.status, 200, res.body);
    assert.equal(JSON.parse(res.body).url, '/page?x=1');
  });

  test('a target naming another host is a 400, and that host is never reached', async () => {
    for (const target of [`//${there}/secret`, `/\\${there}/secret`, `http://${there}/secret`, `http://${there}`, '*']) {
      for (const method of ['GET', 'POST', 'OPTIONS']) {
        const res = await send(method, target);
        assert.equal(res.status, 400, `${method} ${target}: ${res.body}`);
        assert.equal(res.body, refusal, `${method} ${target}`);
      }
    }
    // Authority-form: CONNECT host:port asks for a tunnel; the answer is the same refusal.
    const tunnel = await new Promise<string>((resolve, reject) => {
      let text = '';
      const socket = net.connect(port, '127.0.0.1', () => socket.write(`CONNECT ${there} HTTP/1.1\r\nhost: ${there}\r\ncookie: ${APP_COOKIE}=${token}\r\n\r\n`));
      socket.on('data', (c: Buffer) => { text += c.toString(); }).on('end', () => resolve(text)).on('error', reject);
    });
    assert.match(tunnel, /^HTTP\/1\.1 400 /);
    assert.ok(tunnel.endsWith(`\r\n\r\n${refusal}`), tunnel);
    assert.equal(decoy.connections, 0, 'no connection was made to the other host');
    assert.deepEqual(decoy.requests, []);
  });

  test('a WebSocket upgrade naming another host is a 400 as well', async () => {
    const ws = { origin: APPS_ORIGIN, connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==' };
    for (const target of [`//${there}/ws`, `/\\${there}/ws`, `http://${there}/ws`]) {
      const res = await send('GET', target, ws);
      assert.equal(res.upgraded, false, target);
      assert.equal(res.status, 400, `${target}: ${res.body}`);
      assert.equal(res.body, refusal, target);
    }
    assert.equal(decoy.connections, 0, 'no connection was made to the other host');
  });
});
