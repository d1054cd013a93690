// Configuration layer: where values come from. SVC_* environment variables (names, typing, TOML
// lists and tables) and their layering over svc.toml and the defaults.
import assert from 'node:assert/strict';
import { describe, test, after } from 'node:test';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultConfig, envName, loadConfig } from '../src/config/index.js';
import { load, loadError } from './helpers/config.js';

describe('environment variables', () => {
  test('envName', () => {
    assert.equal(envName(['workflow', 'storage', 'max_file_bytes']), 'SVC_WORKFLOW__STORAGE__MAX_FILE_BYTES');
    assert.equal(envName(['data_api', 'public_url']), 'SVC_DATA_API__PUBLIC_URL');
    assert.equal(envName(['rate_limit', 'login_max_attempts']), 'SVC_RATE_LIMIT__LOGIN_MAX_ATTEMPTS');
    assert.equal(
      envName(['workflow', 'cluster', 'default_resources', 'request', 'ephemeral_storage']),
      'SVC_WORKFLOW__CLUSTER__DEFAULT_RESOURCES__REQUEST__EPHEMERAL_STORAGE',
    );
  });

  test('nested sub-tables', () => {
    const c = load(null, {
      SVC_WORKFLOW__STORAGE__MAX_FILE_BYTES: '42',
      SVC_WORKFLOW__CLUSTER__DEFAULT_RESOURCES__LIMIT__CPU: '3',
      SVC_WORKFLOW__CLUSTER__DEFAULT_RESOURCES__REQUEST__EPHEMERAL_STORAGE: '1Gi',
      SVC_WORKFLOW__CLUSTER__MAX_RESOURCES__REQUEST__CPU: '500m',
      SVC_APPS__POD__LAUNCHER: 'cluster',
      SVC_ENGINES__LOCAL_CONTAINER__HOST: 'tcp://127.0.0.1:2375',
    });
    assert.equal(c.workflow.storage.max_file_bytes, 42);
    assert.equal(c.workflow.storage.prefix, 'workflow/');
    assert.equal(c.workflow.cluster.default_resources.limit.cpu, '3');
    assert.equal(c.workflow.cluster.default_resources.limit.memory, '512Mi');
    assert.equal(c.workflow.cluster.default_resources.request.ephemeral_storage, '1Gi');
    assert.equal(c.workflow.cluster.default_resources.request.cpu, '100m');
    assert.equal(c.workflow.cluster.max_resources.request.cpu, '500m');
    assert.equal(c.apps.pod.launcher, 'cluster');
    assert.equal(c.engines.local_container.host, 'tcp://127.0.0.1:2375');
  });

  test('sections with an underscore in their name', () => {
    const c = load(null, {
      SVC_DATA_API__PUBLIC_URL: 'https://data.example.com',
      SVC_RATE_LIMIT__LOGIN_MAX_ATTEMPTS: '7',
      SVC_POLICY_SERVICE__AUTH_TOKEN: 'tok',
      SVC_DATA_API__SHARED_STORE_URL: 'redis://kv:6379',
    });
    assert.equal(c.data_api.public_url, 'https://data.example.com');
    assert.equal(c.rate_limit.login_max_attempts, 7);
    assert.equal(c.policy_service.auth_token, 'tok');
    assert.equal(c.data_api.shared_store_url, 'redis://kv:6379');
  });

  test('olap driver record: dialect lower-cased into the record key', () => {
    const c = load('[olap.jdbc_drivers.MySQL]\ndriver_class = "com.mysql.Driver"\n', {
      SVC_OLAP__JDBC_DRIVERS__POSTGRES__DRIVER_URL: 'file:///opt/drivers/pg.jar',
      SVC_OLAP__JDBC_DRIVERS__POSTGRES__DRIVER_CLASS: 'org.postgresql.Driver',
    });
    assert.deepEqual(c.olap.jdbc_drivers.postgres, {
      driver_url: 'file:///opt/drivers/pg.jar',
      driver_class: 'org.postgresql.Driver',
    });
    assert.deepEqual(c.olap.jdbc_drivers.mysql, { driver_class: 'com.mysql.Driver' });
  });

  test('lists and tables in TOML syntax', () => {
    const c = load(null, {
      SVC_OIDC__SCOPES: '["openid","email"]',
      SVC_WORKFLOW__PLUGIN_CONFIGURATIONS: '[{type="x", values={"allowed-images"=["a/*"]}}]',
      SVC_ENGINES__LOCAL_CONTAINER__ALLOWED_IMAGES: "['a/b', 'c/d']",
      SVC_WORKFLOW__CLUSTER__IMAGE_PULL_SECRETS: '[]',
      SVC_APPS__POD__COMMAND: '["python", "-m", "apps"]',
      SVC_WORKFLOW__STORAGE: '{prefix = "wf/", max_read_bytes = 8192}',
    });
    assert.deepEqual(c.oidc.scopes, ['openid', 'email']);
    assert.deepEqual(c.workflow.plugin_configurations, [{ type: 'x', values: { 'allowed-images': ['a/*'] } }]);
    assert.deepEqual(c.engines.local_container.allowed_images, ['a/b', 'c/d']);
    assert.deepEqual(c.workflow.cluster.image_pull_secrets, []);
    assert.deepEqual(c.apps.pod.command, ['python', '-m', 'apps']);
    assert.equal(c.workflow.storage.prefix, 'wf/');
    assert.equal(c.workflow.storage.max_read_bytes, 8192);
    assert.equal(c.workflow.storage.max_file_bytes, 1073741824);
  });

  test('a list that is not TOML is one line naming the variable', () => {
    assert.match(loadError(null, { SVC_OIDC__SCOPES: 'openid,email' }), /^SVC_OIDC__SCOPES: expected a TOML list/);
    assert.equal(
      loadError(null, { SVC_OIDC__SCOPES: '"openid"' }),
      'oidc.scopes must be a list, got "openid" (from SVC_OIDC__SCOPES)',
    );
  });

  test('numbers are typed and parsed strictly', () => {
    const c = load(null, { SVC_SERVER__PORT: '9000', SVC_WORKFLOW__STORAGE__MAX_TASK_BYTES: '6000000000' });
    assert.equal(c.server.port, 9000);
    assert.equal(c.workflow.storage.max_task_bytes, 6000000000);
    assert.equal(loadError(null, { SVC_SERVER__PORT: 'abc' }), 'SVC_SERVER__PORT: expected a number, got "abc"');
    assert.equal(loadError(null, { SVC_SERVER__PORT: '12abc' }), 'SVC_SERVER__PORT: expected a number, got "12abc"');
    assert.equal(loadError(null, { SVC_SERVER__PORT: '' }), 'SVC_SERVER__PORT: expected a number, got ""');
    assert.equal(loadError(null, { SVC_SERVER__PORT: ' 80' }), 'SVC_SERVER__PORT: expected a number, got " 80"');
    assert.equal(loadError(null, { SVC_SERVER__PORT: '80.5' }), 'SVC_SERVER__PORT: expected an integer, got "80.5"');
    assert.equal(
      loadError(null, { SVC_DATABASE__MAX_CONNECTIONS: '-1' }),
      'database.max_connections must be >= 0, got -1 (from SVC_DATABASE__MAX_CONNECTIONS)',
    );
  });

  test('booleans: true/false/1/0/yes/no in any case', () => {
    for (const [raw, want] of [
      ['true', true], ['TRUE', true], ['1', true], ['yes', true], ['Yes', true],
      ['false', false], ['False', false], ['0', false], ['no', false], ['NO', false],
    ] as const) {
      assert.equal(load(null, { SVC_LOG__JSON: raw }).log.json, want, raw);
      assert.equal(load(null, { SVC_STORAGE__PATH_STYLE: raw }).storage.path_style, want, raw);
    }
    assert.equal(
      loadError(null, { SVC_LOG__JSON: 'maybe' }),
      'SVC_LOG__JSON: expected a boolean (true/false/1/0/yes/no), got "maybe"',
    );
  });

  test('strings are taken raw', () => {
    const c = load(null, { SVC_OIDC__CLIENT_SECRET: ' s3cr=t "x" ', SVC_LOG__FILTER: '123' });
    assert.equal(c.oidc.client_secret, ' s3cr=t "x" ');
    assert.equal(c.log.filter, '123');
  });

  test('variables that map to no key are ignored', () => {
    const c = load(null, {
      SVC_ADMIN_EMAIL: 'admin@example.com',
      SVC_ADMIN_PASSWORD: 'pw',
      SVC_ENGINE_TLS_INSECURE: '1',
      DATABASE_URL: 'postgres://x',
      SVC_BOGUS__KEY: '1',
      SVC_SERVER__BOGUS: 'x',
      SVC_SERVER__PORT__DEEPER: 'x',
      SVC_APPS__POD__BOGUS: 'x',
      svc_server__port: '1',
    });
    assert.deepEqual(c, defaultConfig());
  });
});

// ---------------------------------------------------------------------------------------------

describe('layering', () => {
  test('env wins over the file, the file over the default', () => {
    const toml = '[server]\nport = 9000\nhost = "127.0.0.1"\n[oidc]\nscopes = ["openid"]\n';
    const fileOnly = load(toml);
    assert.equal(fileOnly.server.port, 9000);
    assert.equal(fileOnly.server.host, '127.0.0.1');
    assert.deepEqual(fileOnly.oidc.scopes, ['openid']);
    const both = load(toml, { SVC_SERVER__PORT: '9100', SVC_OIDC__SCOPES: '["email"]' });
    assert.equal(both.server.port, 9100);
    assert.equal(both.server.host, '127.0.0.1');
    assert.deepEqual(both.oidc.scopes, ['email']);
    assert.equal(both.database.max_connections, 10);
  });

  test('a table from a variable merges over the file key by key', () => {
    const c = load('[workflow.storage]\nprefix = "a/"\nmax_file_bytes = 5\n', {
      SVC_WORKFLOW__STORAGE: '{max_file_bytes = 6}',
    });
    assert.equal(c.workflow.storage.prefix, 'a/');
    assert.equal(c.workflow.storage.max_file_bytes, 6);
  });

  test('a variable for a nested key beats one for its whole table', () => {
    const c = load(null, {
      SVC_WORKFLOW__STORAGE__PREFIX: 'b/',
      SVC_WORKFLOW__STORAGE: '{prefix = "a/"}',
    });
    assert.equal(c.workflow.storage.prefix, 'b/');
  });

  test('a missing svc.toml is fine', () => {
    assert.deepEqual(load(null), defaultConfig());
  });

  test('malformed svc.toml is one line naming the file and the line', () => {
    const m = loadError('[server]\nport = 8080\nhost = [1,\n');
    assert.match(m, /^svc\.toml: invalid TOML: .+ \(line \d+, column \d+\)$/);
    const dup = loadError('[server]\nport = 1\nport = 2\n');
    assert.match(dup, /^svc\.toml: invalid TOML: .*\(line 3, column 1\)$/);
  });

  test('a wrong type in the file names the key and the file', () => {
    assert.equal(loadError('[server]\nport = "x"\n'), 'server.port must be a number, got "x" (from svc.toml)');
    assert.equal(loadError('[log]\njson = "yes"\n'), 'log.json must be a boolean (true or false), got "yes" (from svc.toml)');
    assert.equal(loadError('[oidc]\nscopes = "openid"\n'), 'oidc.scopes must be a list, got "openid" (from svc.toml)');
    assert.equal(loadError('server = 5\n'), 'server must be a table, got 5 (from svc.toml)');
  });
});

// A secret kept out of svc.toml but read by every command (issue 27 point 3: serve-dev.sh writes
// svc.toml without its keys, which stay in .run/secrets/).
describe('{ file = "path" } values in svc.toml', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-config-file-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, 'secrets'));
  writeFileSync(join(dir, 'secrets', 'master_key'), `${'a'.repeat(44)}\n`);
  writeFileSync(join(dir, 'secrets', 'token'), 'catalog-token');
  const file = (toml: string, env: Record<string, string> = {}) => { writeFileSync(join(dir, 'svc.toml'), toml); return loadConfig({ cwd: dir, env }); };

  test('a string key takes the file content (one trailing newline dropped), relative to svc.toml or absolute', () => {
    const c = file(`[secrets]\nmaster_key = { file = "secrets/master_key" }\n[catalog]\nauth_token = { file = "${join(dir, 'secrets', 'token')}" }\n`);
    assert.equal(c.secrets.master_key, 'a'.repeat(44));
    assert.equal(c.catalog.auth_token, 'catalog-token');
  });

  test('the environment still wins over it', () => {
    assert.equal(file('[catalog]\nauth_token = { file = "secrets/token" }\n', { SVC_CATALOG__AUTH_TOKEN: 'from-env' }).catalog.auth_token, 'from-env');
  });

  test('a missing file, a large one or an empty path is one line naming the key; a non-string key keeps its type error', () => {
    assert.throws(() => file('[catalog]\nauth_token = { file = "secrets/nope" }\n'), { message: 'svc.toml: catalog.auth_token: cannot read secrets/nope: ENOENT' });
    writeFileSync(join(dir, 'secrets', 'big'), 'x'.repeat(70_000));
    assert.throws(() => file('[catalog]\nauth_token = { file = "secrets/big" }\n'), /catalog\.auth_token: secrets\/big is larger than 65536 bytes/);
    assert.throws(() => file('[catalog]\nauth_token = { file = "" }\n'), { message: 'svc.toml: catalog.auth_token: file must be a path' });
    assert.throws(() => file('[server]\nport = { file = "secrets/token" }\n'), /server\.port must be a number, got a table/);
  });
});
