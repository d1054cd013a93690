// Subprocess app pods for tests (docs/apps.md "Pods"): a small HTTP program standing in for a
// notebook server, and the configuration that runs it as apps.pod.command. Reusable by any test
// that needs a real pod behind the apps origin (the console's Apps screen in Chromium, too).
//
// The program answers every request with JSON describing what it was given (its SVC_APP_*
// environment, the request's method, URL, headers and body, the notebook source), so a test sees
// exactly what the launcher and the proxy passed. The notebook source steers it: a source
// containing `POD: silent` never listens (the ready timeout), `POD: exit` exits at once; a request
// for /_hang is never answered (the proxy's idle timeout); a POST to /_query sends its body to the
// query gateway at apps.pod.callback_url with the session's token and answers {status, body}.
import assert from 'node:assert/strict';
import { mkdtemp, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { startTestAppWithS3, type TestApp } from './app.js';
import { signInAdmin, type Admin } from './workflow.js';
import { APP_COOKIE, buildAppsOrigin, type AppsOriginOptions } from '../../src/api/apps-origin.js';
import { startAppPodWorker, type AppPodWorker } from '../../src/jobs/app-pod-worker.js';
import { QUEUES } from '../../src/queue/queues.js';
import { createPodLauncher, podManager } from '../../src/apps/pod-runtime.js';
import type { PodLauncher } from '../../src/apps/pods.js';

export const APPS_ORIGIN = 'https://apps.example.test';
export const SERVICE_ORIGIN = 'https://svc.example.test';
const A = '/api/workspaces/default/apps';

export const POD_PROGRAM = `import http from 'node:http';
import { readFileSync, readdirSync } from 'node:fs';
const e = process.env;
// SVC_APP_SOURCE_DIR + name, not SVC_APP_SOURCE: the in-test Kubernetes maps mount paths only.
const source = readFileSync(e.SVC_APP_SOURCE_DIR + '/' + e.SVC_APP_NAME + '.py', 'utf8');
if (source.includes('POD: exit')) process.exit(3);
if (source.includes('POD: silent')) setInterval(() => {}, 1000);
else http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    if (req.url === '/_hang') return;
    // A cell running SQL server-side: through apps.pod.callback_url with the session's token.
    if (req.url === '/_query') {
      fetch(e.SVC_APP_CALLBACK_URL + '/api/apps/query', { method: 'POST', headers: { 'content-type': 'application/json', 'x-svc-app-token': req.headers['x-svc-app-token'] }, body: Buffer.concat(chunks) })
        .then(async (r) => res.end(JSON.stringify({ status: r.status, body: await r.json() })), (err) => res.end(JSON.stringify({ status: 0, body: String(err) })));
      return;
    }
    const env = Object.fromEntries(Object.entries(e).filter(([k]) => k.startsWith('SVC_') || ['PATH', 'HOME', 'XDG_CONFIG_HOME'].includes(k)));
    res.setHeader('content-type', 'application/json');
    res.setHeader('content-security-policy', "default-src 'self'; frame-ancestors *");
    res.setHeader('set-cookie', ['__Host-svc_app=forged; Path=/; Secure', 'pod=1; Path=/', 'svc_session=tossed; Path=/', 'wide=1; Path=/; Domain=example.test']);
    res.end(JSON.stringify({ pid: process.pid, cwd: process.cwd(), method: req.method, url: req.url, headers: req.headers,
      body: Buffer.concat(chunks).toString('utf8'), env, source, files: readdirSync(e.SVC_APP_SOURCE_DIR).sort() }));
  });
}).listen(Number(e.SVC_APP_PORT), e.SVC_APP_HOST);
`;

export interface SubprocessPods {
  /** The pod program (POD_PROGRAM), for a launcher that runs it another way. */
  program: string;
  /** The directory holding all of it: remove it when done (`rm(root, {recursive: true})`). */
  root: string;
  /** Variables for startTestApp / svc serve: the subprocess launcher running POD_PROGRAM. */
  env: Record<string, string>;
  workDir: string;
  configDir: string;
  shimDir: string;
}

/**
 * A fresh work, config and shim directory and the program; `extra` overrides any variable (e.g.
 * SVC_APPS__POD__READY_TIMEOUT_SECS). apps.origin and apps.service_origin are the caller's.
 */
export async function subprocessPods(extra: Record<string, string> = {}): Promise<SubprocessPods> {
  const root = await mkdtemp(path.join(tmpdir(), 'svc-pods-'));
  const workDir = path.join(root, 'work');
  const configDir = path.join(root, 'config');
  const shimDir = path.join(root, 'shim');
  await mkdir(workDir);
  await mkdir(path.join(configDir, 'marimo'), { recursive: true });
  await writeFile(path.join(configDir, 'marimo', 'marimo.toml'), '[runtime]\nauto_instantiate = true\n');
  await mkdir(shimDir);
  const program = path.join(root, 'pod.mjs');
  await writeFile(program, POD_PROGRAM);
  return {
    root, workDir, configDir, shimDir, program,
    env: {
      SVC_APPS__POD__LAUNCHER: 'subprocess',
      SVC_APPS__POD__COMMAND: JSON.stringify([process.execPath, program]),
      SVC_APPS__POD__WORK_DIR: workDir,
      SVC_APPS__POD__CONFIG_DIR: configDir,
      SVC_APPS__POD__VENV_SHIM_DIR: shimDir,
      SVC_APPS__POD__CALLBACK_URL: 'http://127.0.0.1:9/svc',
      ...extra,
    },
  };
}

export interface PodBed { t: TestApp; origin: FastifyInstance; worker: AppPodWorker; admin: Admin; close(): Promise<void> }

/**
 * The service (real PostgreSQL, Redis, S3), the apps origin and the pod worker, on the configured
 * launcher or on `launcher` (both the worker and the origin use it). `env` adds to the apps
 * origin's settings (e.g. subprocessPods().env); `proxy` shortens the proxy's timings (proxyIdleMs:
 * its idle timeout, wsRecheckMs: how often an open WebSocket re-checks its token).
 * close() stops every pod and all of it.
 */
export async function startPodBed(env: Record<string, string>, launcher?: PodLauncher, proxy: Pick<AppsOriginOptions, 'proxyIdleMs' | 'wsRecheckMs'> = {}): Promise<PodBed> {
  const t = await startTestAppWithS3({
    SVC_APPS__ORIGIN: APPS_ORIGIN, SVC_APPS__SERVICE_ORIGIN: SERVICE_ORIGIN, SVC_APPS__SESSION_IDLE_SECS: '3600', SVC_APPS__SESSION_ABSOLUTE_SECS: '7200',
    ...env,
  });
  const origin = await buildAppsOrigin({ services: t.services, podLauncher: launcher, ...proxy });
  const worker = (await startAppPodWorker(t.services, launcher))!;
  const admin = await signInAdmin(t);
  return {
    t, origin, worker, admin,
    async close() {
      await podManager(t.services).stopAll(launcher ?? createPodLauncher(t.config)!);
      await worker.close();
      await origin.close();
      await t.close();
    },
  };
}

/** An app with a draft and (unless `publish` is false) one published version. */
export async function newApp(admin: Admin, name: string, source: string, publish = true): Promise<string> {
  const res = await admin.browser.post(A, { name, source });
  assert.equal(res.statusCode, 201, res.body);
  if (publish) assert.equal((await admin.browser.post(`${A}/${res.json().id}/publish`)).statusCode, 201);
  return res.json().id;
}

/** The ticket flow as the console and the iframe run it: ticket, then redemption with the secret; the app token. */
export async function openSession(admin: Admin, origin: FastifyInstance, appId: string, mode: 'run' | 'edit' = 'run'): Promise<string> {
  const tk = await admin.browser.post(`${A}/${appId}/tickets`, { mode });
  assert.equal(tk.statusCode, 201, tk.body);
  const res = await origin.inject({ method: 'POST', url: '/_svc/redeem', headers: { origin: APPS_ORIGIN, 'content-type': 'application/json' }, payload: { ticket: tk.json().ticket, secret: tk.json().secret } });
  assert.equal(res.statusCode, 204, res.body);
  return (res.cookies as Array<{ name: string; value: string }>).find((c) => c.name === APP_COOKIE)!.value;
}

/** Adds a stop-idle job (what the scheduler adds every 30 s) and waits until the worker ran it. */
export async function runStopJob(t: TestApp): Promise<void> {
  const job = await t.services.queues.get(QUEUES.appPods).add('stop-idle', {});
  await jobDone(t, job.id!);
}

/** Waits until the worker ran `app-pods` job `id` (queued by the test or by the service). */
export async function jobDone(t: TestApp, id: string): Promise<void> {
  const q = t.services.queues.get(QUEUES.appPods);
  for (let i = 0; i < 600; i++) {
    const state = await (await q.getJob(id))?.getState();
    if (state === 'completed') return;
    if (state === 'failed') throw new Error(`app-pods job ${id} failed`);
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`app-pods job ${id} did not run`);
}
