// The `svc` binary as an operator runs it: real PostgreSQL and a real S3 server.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, writeFile, rm, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createTestDatabase, query, type TestDatabase } from './helpers/db.js';
import { startS3, type TestS3 } from './helpers/s3.js';
import { runSvc, cleanEnv, serviceEnv } from './helpers/cli.js';

let db: TestDatabase;
let s3: TestS3;
let env: Record<string, string>;

before(async () => {
  db = await createTestDatabase();
  s3 = await startS3();
  env = serviceEnv(db.url, s3, { SVC_LOG__FILTER: 'warn' });
});
after(async () => { await db.drop(); await s3.stop(); });

describe('command line', () => {
  test('-V prints the version and --help lists the commands', async () => {
    const v = await runSvc(['-V'], { env });
    assert.equal(v.code, 0);
    assert.match(v.stdout.trim(), /^\d+\.\d+\.\d+$/);
    const h = await runSvc(['--help'], { env });
    assert.equal(h.code, 0);
    for (const cmd of ['serve', 'openapi', 'migrate', 'init', 'workspace']) assert.match(h.stdout, new RegExp(`\\b${cmd}\\b`));
  });

  test('an unknown command or option prints usage and exits non-zero', async () => {
    const r = await runSvc(['frobnicate'], { env });
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /unknown command 'frobnicate'/);
    assert.match(r.stderr, /Usage: svc/);
    const o = await runSvc(['migrate', '--bogus'], { env });
    assert.notEqual(o.code, 0);
    assert.match(o.stderr, /unknown option '--bogus'/);
  });

  test('migrate applies pending migrations once and is idempotent', async () => {
    const first = await runSvc(['migrate'], { env });
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stdout, /applied: 0001_base/);
    const second = await runSvc(['migrate'], { env });
    assert.equal(second.code, 0, second.stderr);
    assert.equal(second.stdout.trim(), 'migrations: up to date');
  });

  test('two processes migrating a fresh database at once both succeed, each file applied once', async () => {
    const fresh = await createTestDatabase('svc_race');
    try {
      const e = { ...env, SVC_DATABASE__URL: fresh.url };
      const [a, b] = await Promise.all([runSvc(['migrate'], { env: e }), runSvc(['migrate'], { env: e })]);
      assert.equal(a.code, 0, a.stderr);
      assert.equal(b.code, 0, b.stderr);
      const rows = await query<{ name: string }>(fresh.url, 'SELECT name FROM kysely_migration ORDER BY name');
      const files = (await readdir(new URL('../migrations/', import.meta.url))).filter((f) => f.endsWith('.sql')).map((f) => f.replace(/\.sql$/, '')).sort();
      assert.ok(files.length >= 1);
      assert.deepEqual(rows.map((r) => r.name), files, 'every migration applied exactly once');
    } finally {
      await fresh.drop();
    }
  });

  test('an unreachable database is one line and a non-zero exit', async () => {
    const r = await runSvc(['migrate'], { env: { ...env, SVC_DATABASE__URL: 'postgres://nobody:secretpw@127.0.0.1:1/none' } });
    assert.equal(r.code, 1);
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
    assert.match(r.stderr, /^cannot reach the database at postgres:\/\/nobody:\*\*\*@127\.0\.0\.1:1\/none/);
    assert.doesNotMatch(r.stderr, /secretpw/);
  });
});

describe('svc init', () => {
  test('first run creates the administrator, workspace default and prints the password once', async () => {
    const r = await runSvc(['init'], { env: { ...env, SVC_ADMIN_EMAIL: 'root@example.test' } });
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.trim().split('\n');
    assert.equal(lines[0], 'email: root@example.test');
    const pw = /^password: (\S{20,})$/.exec(lines[1]);
    assert.ok(pw, `a generated password is printed: ${lines[1]}`);
    assert.equal(lines[2], 'workspace: default');

    const users = await query<{ email: string; password_hash: string; is_local: boolean }>(db.url, 'SELECT email, password_hash, is_local FROM users');
    assert.equal(users.length, 1);
    assert.equal(users[0].is_local, true);
    assert.match(users[0].password_hash, /^\$argon2id\$/);
    assert.ok(!users[0].password_hash.includes(pw![1]));
    const { verify } = await import('@node-rs/argon2');
    assert.ok(await verify(users[0].password_hash, pw![1]), 'the printed password is the stored one');

    const grants = await query(db.url, `SELECT p.role FROM platform_role_grants p JOIN users u ON u.id = p.user_id WHERE u.email = 'root@example.test'`);
    assert.deepEqual(grants, [{ role: 'platform_admin' }]);
    const ws = await query(db.url, `SELECT w.slug, w.workflow_containers, w.workflow_plugins, g.role FROM workspaces w JOIN workspace_role_grants g ON g.workspace_id = w.id`);
    assert.deepEqual(ws, [{ slug: 'default', workflow_containers: false, workflow_plugins: false, role: 'ws_admin' }]);
  });

  test('second run without --force reports the existing administrator and changes nothing', async () => {
    const r = await runSvc(['init'], { env: { ...env, SVC_ADMIN_EMAIL: 'other@example.test' } });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /a platform administrator already exists/);
    assert.doesNotMatch(r.stdout, /password/);
    const users = await query(db.url, 'SELECT email FROM users');
    assert.equal(users.length, 1);
  });

  test('--force creates another administrator with the given password, not echoed', async () => {
    const r = await runSvc(['init', '--force'], { env: { ...env, SVC_ADMIN_EMAIL: 'second@example.test', SVC_ADMIN_PASSWORD: 'correct horse battery' } });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^email: second@example\.test$/m);
    assert.doesNotMatch(r.stdout, /correct horse/);
    const admins = await query(db.url, `SELECT u.email FROM platform_role_grants p JOIN users u ON u.id = p.user_id ORDER BY u.email`);
    assert.deepEqual(admins.map((a) => a.email), ['root@example.test', 'second@example.test']);
    const ws = await query(db.url, `SELECT count(*)::int AS n FROM workspaces`);
    assert.deepEqual(ws, [{ n: 1 }], 'workspace default is not created twice');
  });

  test('--force with an existing email fails with the conflict message', async () => {
    const r = await runSvc(['init', '--force'], { env: { ...env, SVC_ADMIN_EMAIL: 'Root@Example.test' } });
    assert.equal(r.code, 1);
    assert.equal(r.stderr.trim(), 'conflict: user already exists: Root@Example.test');
    const users = await query(db.url, 'SELECT email FROM users');
    assert.equal(users.length, 2, 'nothing was created');
  });

  test('governance changes of init are in the audit log', async () => {
    const rows = await query<{ action: string }>(db.url, `SELECT action FROM audit_events WHERE kind = 'governance' ORDER BY id`);
    assert.ok(rows.some((r) => r.action === 'user.create'));
    assert.ok(rows.some((r) => r.action === 'workspace.create'));
  });
});

describe('svc workspace add-group', () => {
  const admin = () => ({ ...env, SVC_ADMIN_EMAIL: 'root@example.test' });

  test('grants ws_editor by default, recorded as made by the administrator', async () => {
    const r = await runSvc(['workspace', 'add-group', '--workspace', 'default', '--group', 'data-eng'], { env: admin() });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.trim(), 'granted: group "data-eng" is ws_editor in workspace "default"');
    const rows = await query(db.url, `SELECT g.name, g.idp_managed, w.role, u.email AS granted_by
      FROM workspace_role_grants w JOIN groups g ON g.id = w.group_id JOIN users u ON u.id = w.granted_by`);
    assert.deepEqual(rows, [{ name: 'data-eng', idp_managed: true, role: 'ws_editor', granted_by: 'root@example.test' }]);
  });

  test('is idempotent, and a new role replaces the old one', async () => {
    const again = await runSvc(['workspace', 'add-group', '--workspace', 'default', '--group', 'data-eng'], { env: admin() });
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /^unchanged:/);
    const viewer = await runSvc(['workspace', 'add-group', '--workspace', 'default', '--group', 'data-eng', '--role', 'ws_viewer'], { env: admin() });
    assert.equal(viewer.code, 0, viewer.stderr);
    assert.match(viewer.stdout, /^changed: group "data-eng" is ws_viewer/);
    const rows = await query(db.url, `SELECT role FROM workspace_role_grants WHERE group_id IS NOT NULL`);
    assert.deepEqual(rows, [{ role: 'ws_viewer' }]);
  });

  test('rejects an unknown role, a missing workspace and a missing administrator with one line', async () => {
    const role = await runSvc(['workspace', 'add-group', '--workspace', 'default', '--group', 'x', '--role', 'owner'], { env: admin() });
    assert.notEqual(role.code, 0);
    assert.match(role.stderr, /argument 'owner' is invalid\. Allowed choices are ws_admin, ws_editor, ws_viewer/);

    const ws = await runSvc(['workspace', 'add-group', '--workspace', 'nope', '--group', 'x'], { env: admin() });
    assert.equal(ws.code, 1);
    assert.equal(ws.stderr.trim(), 'not_found: workspace does not exist: nope');

    const missing = await runSvc(['workspace', 'add-group', '--workspace', 'default', '--group', 'x'], { env: { ...env, SVC_ADMIN_EMAIL: 'ghost@example.test' } });
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /^not_found: administrator does not exist: ghost@example\.test/);
    const groups = await query(db.url, `SELECT name FROM groups WHERE name = 'x'`);
    assert.equal(groups.length, 0, 'a failed grant leaves nothing behind');
  });

  test('without --workspace or --group: usage and a non-zero exit', async () => {
    const r = await runSvc(['workspace', 'add-group', '--group', 'x'], { env: admin() });
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /required option '--workspace <slug>' not specified/);
  });
});

describe('svc openapi', () => {
  test('prints OpenAPI 3.1 JSON even with a broken configuration present, and needs no database', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'svc-openapi-'));
    try {
      await writeFile(path.join(dir, 'svc.toml'), 'this is [not toml\n[oidc]\nenabled = "yes"\n');
      const r = await runSvc(['openapi'], {
        cwd: dir,
        env: cleanEnv({ SVC_OIDC__ENABLED: 'true', SVC_DATABASE__URL: 'postgres://x@127.0.0.1:1/none', SVC_SERVER__PORT: 'not-a-port' }),
      });
      assert.equal(r.code, 0, r.stderr);
      const doc = JSON.parse(r.stdout);
      assert.equal(doc.openapi, '3.1.0');
      assert.ok(doc.paths['/healthz']?.get);
      assert.ok(doc.paths['/readyz']?.get);
      assert.ok(doc.paths['/metrics']?.get);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

test('a database with every migration applied is checked with one read, without the lock; a new file still goes the full way', async () => {
  const { createDb } = await import('../src/db/index.js');
  const { migrateToLatest, MIGRATIONS_DIR } = await import('../src/db/migrate.js');
  const { Client } = (await import('pg')).default;
  const fresh = await createTestDatabase('svc_migrate');
  const dbh = createDb({ url: fresh.url, maxConnections: 2 });
  const holder = new Client({ connectionString: fresh.url });
  const dir = await mkdtemp(path.join(tmpdir(), 'svc-migrations-'));
  try {
    assert.ok((await migrateToLatest(dbh, fresh.url)).applied.length > 0);
    // Another process holds the migration lock (as during its own migration): an up-to-date check does not wait for it.
    await holder.connect();
    await holder.query('SELECT pg_advisory_lock($1)', [0x5356_4d47]);
    assert.deepEqual(await migrateToLatest(dbh, fresh.url), { applied: [] });
    await holder.query('SELECT pg_advisory_unlock($1)', [0x5356_4d47]);
    // A file not yet recorded is applied under the lock, by kysely's migrator.
    for (const f of await readdir(MIGRATIONS_DIR)) await writeFile(path.join(dir, f), '');
    await writeFile(path.join(dir, '9999_later.sql'), 'CREATE TABLE later_one (id int)');
    assert.deepEqual(await migrateToLatest(dbh, fresh.url, dir), { applied: ['9999_later'] });
    assert.deepEqual(await query(fresh.url, 'SELECT count(*)::int AS n FROM later_one'), [{ n: 0 }]);
  } finally {
    await holder.end();
    await dbh.destroy();
    await rm(dir, { recursive: true, force: true });
    await fresh.drop();
  }
});
