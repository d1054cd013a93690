// The development setup (issue 27 points 1 and 3): scripts/serve-dev.sh --write-config writes the
// svc.toml every command reads, secrets kept in .run/secrets/; the startup checks accept it; and
// `svc serve` started from that folder (only the database, object store and ports moved to this
// test's) has everything on: the catalog (each workspace its warehouse), the policy service with
// its token, the apps listener, and a CLI command that works with no SVC_ variable set.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadConfig, startupChecks, decodeBase64Strict, type Config } from '../src/config/index.js';
import { createTestDatabase, type TestDatabase } from './helpers/db.js';
import { startS3, type TestS3 } from './helpers/s3.js';
import { ROOT, cleanEnv, runSvc, spawnSvc, waitExit } from './helpers/cli.js';
import { freePorts } from './helpers/net.js';
import { redisUrl } from './helpers/redis-dbs.js';

const writeConfig = (dir: string) => spawnSync('bash', [path.join(ROOT, 'scripts/serve-dev.sh'), '--write-config'], { env: cleanEnv({ SVC_DEV_ROOT: dir }), encoding: 'utf8' });

let dir: string;
let cfg: Config;
before(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'svc-dev-'));
  const r = writeConfig(dir);
  assert.equal(r.status, 0, r.stderr);
  cfg = loadConfig({ cwd: dir, env: {} });
});
after(async () => { await rm(dir, { recursive: true, force: true }); });

test('the startup checks accept it, and everything is on', () => {
  startupChecks(cfg);
  assert.equal(cfg.catalog.enabled, true);
  assert.equal(cfg.policy_service.enabled, true);
  assert.ok(cfg.policy_service.auth_token.length >= 40 && cfg.catalog.auth_token.length >= 40);
  assert.equal(decodeBase64Strict(cfg.secrets.master_key)?.length, 32);
  assert.ok(cfg.workflow.worker_enabled && cfg.workflow.scheduler_enabled);
  assert.equal(cfg.engines.embedded_data_dir, path.join(dir, '.run/duckdb'), 'the embedded databases are files under the run folder');
  assert.equal(cfg.apps.pod.launcher, 'subprocess');
  assert.deepEqual(cfg.apps.pod.command, ['python3', path.join(ROOT, 'scripts/dev/app-pod.py')]);
  assert.ok(existsSync(cfg.apps.pod.command[1]));
  assert.equal(cfg.apps.pod.work_dir, path.join(dir, '.run/apps'));
  assert.match(cfg.apps.pod.callback_url, /^http:\/\/127\.0\.0\.1:8080$/);
});

test('apps on a sibling *.localhost origin, one site with the service; links point at the service origin', () => {
  const apps = new URL(cfg.apps.origin);
  const service = new URL(cfg.apps.service_origin);
  assert.notEqual(apps.hostname, service.hostname, 'never another port of the service\'s host');
  assert.match(apps.hostname, /\.localhost$/);
  const parent = (h: string) => h.split('.').slice(1).join('.');
  assert.equal(parent(apps.hostname), parent(service.hostname), 'siblings under one parent');
  assert.notEqual(parent(service.hostname), 'localhost', 'the parent is a site of its own (localhost is a TLD to browsers)');
  assert.equal(cfg.automation.browser_url, cfg.apps.service_origin);
  assert.ok(cfg.session.cookie_name.startsWith('__Host-') && cfg.csrf.cookie_name.startsWith('__Host-'));
  assert.ok(cfg.automation.webhook_allow_hosts.includes('127.0.0.0/8'), 'alert webhooks may reach local receivers');
});

test('secrets stay out of svc.toml, in files only the user reads, kept across runs; a svc.toml of the user\'s own is left alone', () => {
  const toml = readFileSync(path.join(dir, 'svc.toml'), 'utf8');
  for (const secret of [cfg.secrets.master_key, cfg.catalog.auth_token, cfg.policy_service.auth_token, cfg.database.url, cfg.storage.secret_key]) {
    assert.ok(!toml.includes(secret), 'no secret value in svc.toml');
  }
  for (const f of ['master_key', 'catalog_token', 'policy_token', 'database_url']) assert.equal(statSync(path.join(dir, '.run/secrets', f)).mode & 0o077, 0, f);
  assert.equal(writeConfig(dir).status, 0);
  assert.equal(loadConfig({ cwd: dir, env: {} }).secrets.master_key, cfg.secrets.master_key, 'the master key survives a second run');
  writeFileSync(path.join(dir, 'svc.toml'), '[server]\nport = 9999\n');
  const r = writeConfig(dir);
  assert.match(r.stderr, /svc\.toml exists and was not written by this script: keeping it/);
  assert.equal(readFileSync(path.join(dir, 'svc.toml'), 'utf8'), '[server]\nport = 9999\n');
  assert.equal(writeConfig(path.join(dir, 'again')).status, 0);
});

describe('svc started in that folder (database, object store and ports moved to this test\'s)', () => {
  let db: TestDatabase;
  let s3: TestS3;
  let home: string;
  before(async () => {
    [db, s3] = await Promise.all([createTestDatabase('svc_dev'), startS3()]);
    home = path.join(dir, 'again');
  });
  after(async () => { await Promise.all([db?.drop(), s3?.stop()]); });

  test('the catalog answers for workspace default, the policy service wants its token, the apps listener is up, and svc client list runs from that folder', async () => {
    const [port, appsPort] = await freePorts(2);
    const moved = {
      SVC_DATABASE__URL: db.url, SVC_STORAGE__ENDPOINT: s3.endpoint, SVC_STORAGE__ACCESS_KEY: s3.accessKey, SVC_STORAGE__SECRET_KEY: s3.secretKey,
      SVC_SERVER__PORT: String(port), SVC_APPS__LISTEN: `127.0.0.1:${appsPort}`, SVC_LOG__JSON: 'true', SVC_REDIS__URL: redisUrl('serveDev'),
    };
    const init = await runSvc(['init'], { env: cleanEnv(moved), cwd: home });
    assert.equal(init.code, 0, init.stderr);
    const dev = loadConfig({ cwd: home, env: {} });
    const { child } = await spawnSvc(['serve'], { env: cleanEnv(moved), cwd: home, ready: /"msg":"listening"/ });
    try {
      const base = `http://127.0.0.1:${port}`;
      const catalog = await fetch(`${base}/catalog/v1/config?warehouse=default`, { headers: { authorization: `Bearer ${dev.catalog.auth_token}` } });
      assert.equal(catalog.status, 200);
      assert.equal(((await catalog.json()) as { overrides: { 'warehouse-location': string } }).overrides['warehouse-location'], 's3://warehouse/default');
      assert.equal((await fetch(`${base}/service/plugins/services`)).status, 401, 'the policy service is on and wants its token');
      assert.equal((await fetch(`${base}/service/plugins/services`, { headers: { authorization: `Bearer ${dev.policy_service.auth_token}` } })).status, 200);
      assert.equal((await fetch(`http://127.0.0.1:${appsPort}/_svc/session`)).status, 401, 'the apps listener answers (no app cookie yet)');
      // the CLI from that folder, with nothing but svc.toml (the test's database and store moved in by variables, as above)
      const list = await runSvc(['client', 'list'], { env: cleanEnv(moved), cwd: home });
      assert.equal(list.code, 0, list.stderr);
      assert.equal(list.stdout.trim(), 'no clients');
    } finally {
      child.kill('SIGTERM');
      await waitExit(child);
    }
  });
});
