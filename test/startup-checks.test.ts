// Every startup check of SPEC part 7 through the real binary: one line on stderr, exit 1,
// before anything touches the database (the URL here points nowhere).
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, writeFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { runSvc, cleanEnv } from './helpers/cli.js';

const KEY64 = Buffer.alloc(64, 7).toString('base64');
const STORAGE = { SVC_STORAGE__ACCESS_KEY: 'ak', SVC_STORAGE__SECRET_KEY: 'sk', SVC_DATABASE__URL: 'postgres://x@127.0.0.1:1/none' };

const cases: Array<{ name: string; env: Record<string, string>; exact?: string; begins?: string }> = [
  { name: 'oidc without secret key', env: { ...STORAGE, SVC_OIDC__ENABLED: 'true', SVC_OIDC__ISSUER_URL: 'https://idp', SVC_OIDC__CLIENT_ID: 'c' },
    exact: 'oidc.enabled requires security.secret_key (base64, >=64 bytes)' },
  { name: 'oidc with a short secret key', env: { ...STORAGE, SVC_OIDC__ENABLED: 'true', SVC_SECURITY__SECRET_KEY: Buffer.alloc(63).toString('base64'), SVC_OIDC__ISSUER_URL: 'https://idp', SVC_OIDC__CLIENT_ID: 'c' },
    exact: 'oidc.enabled requires security.secret_key (base64, >=64 bytes)' },
  { name: 'oidc without issuer', env: { ...STORAGE, SVC_OIDC__ENABLED: 'true', SVC_SECURITY__SECRET_KEY: KEY64, SVC_OIDC__CLIENT_ID: 'c' },
    exact: 'oidc.enabled requires issuer_url and client_id' },
  { name: 'catalog without token', env: { ...STORAGE, SVC_CATALOG__ENABLED: 'true' },
    exact: 'catalog.enabled requires warehouse and auth_token' },
  { name: 'catalog without storage credentials', env: { SVC_DATABASE__URL: STORAGE.SVC_DATABASE__URL, SVC_CATALOG__ENABLED: 'true', SVC_CATALOG__AUTH_TOKEN: 't' },
    exact: 'catalog.enabled requires storage access_key/secret_key/bucket' },
  { name: 'short master key', env: { ...STORAGE, SVC_SECRETS__MASTER_KEY: Buffer.alloc(31).toString('base64') },
    exact: 'secrets.master_key must be base64 of >=32 bytes' },
  { name: 'no storage credentials', env: { SVC_DATABASE__URL: STORAGE.SVC_DATABASE__URL },
    begins: 'the apps API requires [storage] bucket, access_key, secret_key' },
  { name: 'engine max_rows 0', env: { ...STORAGE, SVC_ENGINE__MAX_ROWS: '0' },
    exact: 'engine.max_rows and engine.query_timeout_secs must be >= 1' },
  { name: 'kill_poll_ms below 100', env: { ...STORAGE, SVC_WORKFLOW__KILL_POLL_MS: '50' },
    begins: 'workflow.kill_poll_ms' },
  { name: 'container runner without plugin host image', env: { ...STORAGE, SVC_WORKFLOW__CONTAINER_RUNNER: 'cluster' },
    begins: 'workflow.container_runner other than none requires [storage]' },
  { name: 'apps origin equal to service origin', env: { ...STORAGE, SVC_APPS__ORIGIN: 'https://apps.example.com', SVC_APPS__SERVICE_ORIGIN: 'https://apps.example.com' },
    begins: 'apps.origin must differ from apps.service_origin' },
  { name: 'unknown pod launcher', env: { ...STORAGE, SVC_APPS__POD__LAUNCHER: 'docker' },
    begins: 'apps.pod.launcher must be none, subprocess or cluster' },
  { name: 'data_api replicas without shared store', env: { ...STORAGE, SVC_DATA_API__REPLICAS: '2' },
    begins: 'data_api.replicas above 1 requires data_api.shared_store_url' },
];

describe('startup checks through the binary', () => {
  for (const c of cases) {
    test(c.name, async () => {
      const r = await runSvc(['migrate'], { env: cleanEnv(c.env) });
      assert.equal(r.code, 1, r.stdout);
      const lines = r.stderr.trimEnd().split('\n');
      assert.equal(lines.length, 1, `one line: ${r.stderr}`);
      if (c.exact) assert.equal(lines[0], c.exact);
      if (c.begins) assert.ok(lines[0].startsWith(c.begins), lines[0]);
      if (c.name === 'kill_poll_ms below 100') assert.match(lines[0], /below the minimum 100/);
    });
  }

  test('every command that touches the database runs the checks', async () => {
    for (const args of [['serve'], ['init'], ['workspace', 'add-group', '--workspace', 'default', '--group', 'g']]) {
      const r = await runSvc(args, { env: cleanEnv({ ...STORAGE, SVC_CATALOG__ENABLED: 'true' }) });
      assert.equal(r.code, 1, args.join(' '));
      assert.equal(r.stderr.trim(), 'catalog.enabled requires warehouse and auth_token');
    }
  });

  test('a malformed svc.toml is one line naming the file; a bad env value names the variable', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'svc-toml-'));
    try {
      await writeFile(path.join(dir, 'svc.toml'), '[server\nport = 1\n');
      const r = await runSvc(['migrate'], { cwd: dir, env: cleanEnv(STORAGE) });
      assert.equal(r.code, 1);
      assert.equal(r.stderr.trimEnd().split('\n').length, 1, r.stderr);
      assert.match(r.stderr, /^svc\.toml/);
      assert.doesNotMatch(r.stderr, /at .*\.js:\d+/, 'no stack trace');

      const e = await runSvc(['migrate'], { env: cleanEnv({ ...STORAGE, SVC_SERVER__PORT: 'eighty' }) });
      assert.equal(e.code, 1);
      assert.equal(e.stderr.trimEnd().split('\n').length, 1, e.stderr);
      assert.match(e.stderr, /^SVC_SERVER__PORT/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('svc.toml in the working directory is read and the environment wins over it', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'svc-toml-'));
    try {
      await writeFile(path.join(dir, 'svc.toml'), '[catalog]\nenabled = true\n');
      const fromFile = await runSvc(['migrate'], { cwd: dir, env: cleanEnv(STORAGE) });
      assert.equal(fromFile.stderr.trim(), 'catalog.enabled requires warehouse and auth_token');
      const envWins = await runSvc(['migrate'], { cwd: dir, env: cleanEnv({ ...STORAGE, SVC_CATALOG__ENABLED: 'false' }) });
      assert.match(envWins.stderr, /^cannot reach the database/, 'checks passed; only the database is missing');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
