// `svc serve` stops the app pods it launched when it shuts down (issue 24 point 10): a real
// `svc serve` process with the subprocess launcher (the test's own HTTP program as the pod), an app
// opened through the ticket flow over HTTP as a browser would, then SIGTERM (or SIGINT): the server
// exits 0, no pod process is left (checked by pid), their directories are gone and their records
// are removed from Redis. Real PostgreSQL, Redis (a database of this file's own), S3, processes.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import http from 'node:http';
import { existsSync, readdirSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { Redis } from 'ioredis';
import { spawnSvc, waitExit } from './helpers/cli.js';
import { freePorts } from './helpers/net.js';
import { startServeBed, type ServeBed } from './helpers/serve-bed.js';
import { subprocessPods, type SubprocessPods } from './helpers/app-pods.js';
import { APP_COOKIE } from '../src/api/apps-origin.js';
import { redisUrl } from './helpers/redis-dbs.js';

const REDIS_URL = redisUrl('appsServeShutdown');
const APPS = 'https://apps.example.test';
const A = '/api/workspaces/default/apps';

const alive = (pid: number) => { try { process.kill(pid, 0); return true; } catch { return false; } };

/** A request to the apps listener (plain http.request: the browser's Origin header is set by hand). */
function appsRequest(port: number, method: string, path: string, headers: Record<string, string>, body?: string): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path, headers }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => { text += c.toString(); });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('svc serve and its app pods at shutdown', () => {
  let pods: SubprocessPods;
  let bed: ServeBed;
  before(async () => {
    pods = await subprocessPods();
    bed = await startServeBed(REDIS_URL, { ...pods.env, SVC_APPS__ORIGIN: APPS, SVC_APPS__SERVICE_ORIGIN: 'https://svc.example.test' });
  });
  after(async () => {
    await bed.close();
    await rm(pods.root, { recursive: true, force: true });
  });

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    test(`${signal}: every pod the server launched is stopped before it exits`, async () => {
      const [port, appsPort] = await freePorts(2);
      const { child, output } = await spawnSvc(['serve'], {
        env: { ...bed.env, SVC_SERVER__PORT: String(port), SVC_APPS__LISTEN: `127.0.0.1:${appsPort}` },
        ready: /"msg":"apps listener listening"/,
      });
      const base = `http://127.0.0.1:${port}`;
      const pids: number[] = [];
      try {
        const { headers } = await bed.signIn(base);
        const api = async (path: string, body: unknown) => {
          const res = await fetch(`${base}${path}`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify(body) });
          assert.ok(res.ok, `${path}: ${res.status} ${await res.clone().text()}`);
          return res.json() as Promise<Record<string, unknown>>;
        };
        const app = await api(A, { name: `down-${signal.toLowerCase()}`, source: 'x = 1\n' });
        await api(`${A}/${app.id as string}/publish`, {});
        // A run pod and the author's edit pod: two processes.
        for (const mode of ['run', 'edit']) {
          const tk = await api(`${A}/${app.id as string}/tickets`, { mode });
          const redeemed = await appsRequest(appsPort, 'POST', '/_svc/redeem', { origin: APPS, 'content-type': 'application/json' }, JSON.stringify({ ticket: tk.ticket, secret: tk.secret }));
          assert.equal(redeemed.status, 204, redeemed.body);
          const cookie = ([] as string[]).concat(redeemed.headers['set-cookie'] ?? []).map((c) => c.split(';')[0]!).find((c) => c.startsWith(`${APP_COOKIE}=`))!;
          const page = await appsRequest(appsPort, 'GET', '/', { cookie });
          assert.equal(page.status, 200, page.body);
          const seen = JSON.parse(page.body) as { pid: number; cwd: string; env: { SVC_APP_MODE: string } };
          assert.equal(seen.env.SVC_APP_MODE, mode);
          assert.ok(alive(seen.pid));
          pids.push(seen.pid);
          assert.ok(existsSync(seen.cwd));
        }
        const redis = new Redis(REDIS_URL);
        try {
          assert.equal((await redis.keys('svc:apps:pod:*')).filter((k) => !k.includes(':sessions') && !k.includes(':claim')).length, 2, 'two pods recorded');
          child.kill(signal);
          assert.equal(await waitExit(child), 0, output());
          assert.deepEqual(pids.filter(alive), [], `no pod process outlives svc serve:\n${output()}`);
          assert.deepEqual(await redis.keys('svc:apps:pod:*'), [], 'and no record of them, their seats or claims is left');
        } finally {
          await redis.quit();
        }
        assert.match(output(), /"pods":2,"msg":"app pods stopped: the service is shutting down"/);
        assert.deepEqual(readdirSync(pods.workDir), [], 'their working directories are removed');
      } finally {
        if (child.exitCode === null) child.kill('SIGKILL');
        // Whatever a failure left running is not left to the machine.
        for (const pid of pids.filter(alive)) { try { process.kill(-pid, 'SIGKILL'); } catch { /* gone */ } }
      }
    });
  }
});
