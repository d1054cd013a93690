// An in-process app on a fresh database with a clock the test moves: for fast route tests
// through fastify's inject().
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadConfig, startupChecks, type Config } from '../../src/config/index.js';
import { createServices, type Services } from '../../src/services.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { buildApp } from '../../src/api/app.js';
import { ManualClock } from '../../src/clock.js';
import { createLogging } from '../../src/log/logger.js';
import { createTestDatabase, type TestDatabase } from './db.js';
import { startS3, storageEnv } from './s3.js';
import { PassThrough } from 'node:stream';
import { randomBytes } from 'node:crypto';

export interface TestApp {
  app: FastifyInstance;
  services: Services;
  clock: ManualClock;
  db: TestDatabase;
  config: Config;
  /** What the app logged so far (at the level of SVC_LOG__FILTER, `error` unless the test sets it). */
  logs(): string;
  close(): Promise<void>;
}

export async function startTestApp(env: Record<string, string> = {}): Promise<TestApp> {
  const db = await createTestDatabase();
  const cwd = await mkdtemp(path.join(tmpdir(), 'svc-app-'));
  const config = loadConfig({
    cwd,
    env: { SVC_DATABASE__URL: db.url, SVC_STORAGE__ACCESS_KEY: 'ak', SVC_STORAGE__SECRET_KEY: 'sk', SVC_LOG__FILTER: 'error', SVC_LOG__JSON: 'true', ...env },
  });
  startupChecks(config);
  const clock = new ManualClock(Date.parse('2026-06-01T12:00:00Z'));
  const sink = new PassThrough();
  let logged = '';
  sink.on('data', (d: Buffer) => { if (logged.length < 8_000_000) logged += d.toString(); });
  // Every test app has its own BullMQ key prefix, so suites share one Redis without meeting.
  const queuePrefix = `svc-t-${randomBytes(4).toString('hex')}`;
  const services = createServices(config, { clock, queuePrefix, logging: createLogging({ filter: config.log.filter, json: true }, sink) });
  await migrateToLatest(services.db, config.database.url);
  const app = await buildApp({ services, logger: services.logging.module('svc::api') });
  await app.ready();
  return {
    app, services, clock, db, config,
    logs: () => logged,
    async close() {
      await app.close();
      for (const q of services.queues.all()) await q.obliterate({ force: true }).catch(() => {});
      await services.close();
      await db.drop();
    },
  };
}

/** A test app whose object store is an S3 server (s3rver) of its own; close() stops both. */
export async function startTestAppWithS3(env: Record<string, string> = {}): Promise<TestApp> {
  const s3 = await startS3();
  try {
    const t = await startTestApp({ ...storageEnv(s3), ...env });
    return { ...t, async close() { await t.close(); await s3.stop(); } };
  } catch (err) {
    await s3.stop();
    throw err;
  }
}

/**
 * Another replica of `t`: same configuration, database, Redis and clock, listening for cache
 * invalidations as `svc serve` does. Its `app` and `services` can stand in for `t`'s (Browser).
 */
export async function startReplica(t: TestApp): Promise<TestApp> {
  const sink = new PassThrough();
  sink.resume();
  const services = createServices(t.config, { clock: t.clock, logging: createLogging({ filter: t.config.log.filter, json: true }, sink) });
  const stop = await services.invalidator.listen();
  const app = await buildApp({ services, logger: services.logging.module('svc::api') });
  await app.ready();
  return {
    ...t, app, services, logs: () => '',
    async close() { await app.close(); await stop(); await services.close(); },
  };
}

/** A cookie jar for one browser: remembers Set-Cookie and sends the CSRF header. */
export class Browser {
  cookies = new Map<string, string>();
  constructor(private readonly t: TestApp, private readonly ip = '203.0.113.7') {}

  async request(method: string, url: string, body?: unknown, opts: { csrf?: boolean; headers?: Record<string, string> } = {}): Promise<LightMyRequestResponse> {
    const headers: Record<string, string> = { 'x-forwarded-for': this.ip, ...opts.headers };
    if (this.cookies.size) headers.cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    const csrf = this.cookies.get(this.t.config.csrf.cookie_name);
    if (opts.csrf !== false && csrf) headers[this.t.config.csrf.header_name] = csrf;
    const res = await this.t.app.inject({ method: method as never, url, headers, payload: body as never });
    for (const c of res.cookies as Array<{ name: string; value: string; maxAge?: number; expires?: Date }>) {
      if (c.value === '' || c.maxAge === 0 || (c.expires && c.expires.getTime() < Date.now())) this.cookies.delete(c.name);
      else this.cookies.set(c.name, c.value);
    }
    return res;
  }

  get = (url: string) => this.request('GET', url);
  post = (url: string, body?: unknown, opts?: { csrf?: boolean }) => this.request('POST', url, body, opts);
  put = (url: string, body?: unknown, opts?: { csrf?: boolean }) => this.request('PUT', url, body, opts);
  delete = (url: string, opts?: { csrf?: boolean }) => this.request('DELETE', url, undefined, opts);

  async login(email: string, password: string): Promise<LightMyRequestResponse> {
    return this.post('/api/auth/login', { email, password });
  }
}
