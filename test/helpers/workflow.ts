// Helpers for the workflow trigger, webhook, retention and dashboard suites: a signed-in
// administrator, flows saved directly, more "replicas" (Services objects on the same database and
// Redis prefix), captured logs, and polling.
import { PassThrough } from 'node:stream';
import { initAdministrator } from '../../src/bootstrap/init.js';
import { createServices, type Services } from '../../src/services.js';
import { createLogging, type Logging } from '../../src/log/logger.js';
import type { Clock } from '../../src/clock.js';
import type { Config } from '../../src/config/index.js';
import { saveFlow, type FlowRecord } from '../../src/workflows/flows.js';
import { findWorkspace } from '../../src/workspaces/workspaces.js';
import { Browser, type TestApp } from './app.js';

export const ADMIN = { email: 'admin@example.test', password: 'admin-password-1' };

export interface Admin { browser: Browser; userId: string; workspaceId: string }

/** Creates the first administrator (platform_admin, ws_admin of `default`) and signs them in. */
export async function signInAdmin(t: TestApp, ip = '198.51.100.200'): Promise<Admin> {
  await initAdministrator(t.services.db, { email: ADMIN.email, password: ADMIN.password, force: false });
  const browser = new Browser(t, ip);
  const res = await browser.login(ADMIN.email, ADMIN.password);
  if (res.statusCode !== 200) throw new Error(`admin sign-in failed: ${res.statusCode} ${res.body}`);
  const user = await t.services.db.selectFrom('users').select('id').where('email', '=', ADMIN.email).executeTakeFirstOrThrow();
  const ws = await findWorkspace(t.services.db, 'default');
  return { browser, userId: user.id, workspaceId: ws!.id };
}

/** Saves a flow from its YAML source as the administrator (no HTTP). */
export async function saveYaml(t: TestApp, admin: Admin, source: string): Promise<FlowRecord> {
  return (await saveFlow(t.services, { id: admin.userId, email: ADMIN.email }, admin.workspaceId, 'default', source)).flow;
}

/** Logging that keeps every JSON line, for asserting on log messages. */
export function captureLogging(filter = 'info'): { logging: Logging; lines(): Array<Record<string, unknown>> } {
  const sink = new PassThrough();
  const chunks: string[] = [];
  sink.on('data', (c: Buffer) => chunks.push(c.toString('utf8')));
  return {
    logging: createLogging({ filter, json: true }, sink),
    lines: () => chunks.join('').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}

/** Another process on the same database and Redis prefix (a replica), with its own clock if given. */
export function replica(t: TestApp, opts: { clock?: Clock; logging?: Logging; config?: (c: Config) => Config } = {}): Services {
  const quiet = new PassThrough();
  quiet.resume();
  const config = opts.config ? opts.config(structuredClone(t.config)) : t.config;
  return createServices(config, {
    clock: opts.clock ?? t.clock,
    queuePrefix: t.services.queues.prefix,
    logging: opts.logging ?? createLogging({ filter: 'error', json: true }, quiet),
  });
}

export async function waitFor<T>(fn: () => Promise<T | undefined | null | false>, what: string, timeoutMs = 15_000, everyMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v as T;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export async function executionsOf(s: Services, namespace: string, flowId: string) {
  return s.db.selectFrom('executions').selectAll().where('namespace', '=', namespace).where('flow_id', '=', flowId).orderBy('created_at').orderBy('id').execute();
}

/** Waits until the execution has ended; returns its row. */
export async function waitForEnd(s: Services, id: string, timeoutMs = 20_000) {
  return waitFor(async () => {
    const e = await s.db.selectFrom('executions').selectAll().where('id', '=', id).executeTakeFirst();
    return e?.ended_at ? e : undefined;
  }, `execution ${id} to end`, timeoutMs);
}

/** Removes every key of the test's BullMQ prefix (all queues, schedulers included). */
export async function obliterateAll(s: Services): Promise<void> {
  for (const q of s.queues.all()) {
    await q.obliterate({ force: true }).catch(() => {});
  }
}
