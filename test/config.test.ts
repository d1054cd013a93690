// Configuration layer: defaults, svc.toml, environment, value rules, startup checks, docs.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  ConfigError,
  configSchema,
  defaultConfig,
  envName,
  idpIssuer,
  listLeaves,
  loadConfig,
  renderConfigDocs,
  startupChecks,
  type Config,
} from '../src/config/index.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** Load with an optional svc.toml (in a fresh temp dir) and an explicit environment. */
function load(toml: string | null, env: Record<string, string> = {}): Config {
  const dir = mkdtempSync(join(tmpdir(), 'svc-config-'));
  dirs.push(dir);
  if (toml !== null) writeFileSync(join(dir, 'svc.toml'), toml);
  return loadConfig({ cwd: dir, env });
}

/** The ConfigError message of a failing load; asserts it is one line. */
function loadError(toml: string | null, env: Record<string, string> = {}): string {
  try {
    load(toml, env);
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${String(err)}`);
    assert.ok(!err.message.includes('\n'), `message is not one line: ${err.message}`);
    return err.message;
  }
  assert.fail('expected loadConfig to throw');
}

// ---------------------------------------------------------------------------------------------

describe('defaults', () => {
  const c = defaultConfig();

  test('schema parsed from {} equals loading with no file and no environment', () => {
    assert.deepEqual(load(null), c);
    assert.deepEqual(configSchema.parse({}), c);
  });

  test('a sample of every section', () => {
    assert.equal(c.server.host, '0.0.0.0');
    assert.equal(c.server.port, 8080);
    assert.equal(c.database.url, 'postgres://svc:svc@127.0.0.1:5432/svc');
    assert.equal(c.database.max_connections, 10);
    assert.equal(c.log.filter, 'info');
    assert.equal(c.log.json, false);
    assert.equal(c.session.cookie_name, 'svc_session');
    assert.equal(c.session.absolute_ttl_hours, 24);
    assert.equal(c.session.idle_ttl_minutes, 60);
    assert.equal(c.session.secure, false);
    assert.equal(c.csrf.cookie_name, 'svc_csrf');
    assert.equal(c.csrf.header_name, 'X-Svc-CSRF');
    assert.deepEqual(c.rate_limit, {
      login_max_attempts: 5,
      login_window_secs: 300,
      login_lockout_secs: 300,
      token_max_attempts: 60,
      token_window_secs: 60,
      token_lockout_secs: 60,
    });
    assert.equal(c.oidc.enabled, false);
    assert.equal(c.oidc.issuer_url, '');
    assert.equal(c.oidc.client_id, '');
    assert.equal(c.oidc.client_secret, '');
    assert.equal(c.oidc.redirect_url, 'http://localhost:8080/api/auth/oidc/callback');
    assert.deepEqual(c.oidc.scopes, ['openid', 'email', 'profile']);
    assert.equal(c.oidc.groups_claim, 'groups');
    assert.equal(c.oidc.post_login_redirect, '/');
    assert.equal(c.oidc.catalog_audience, 'svc-catalog');
    assert.equal(c.idp.issuer, undefined);
    assert.equal(c.security.secret_key, '');
    assert.equal(c.secrets.master_key, '');
    assert.equal(c.catalog.enabled, false);
    assert.equal(c.catalog.warehouse, 's3://warehouse');
    assert.equal(c.catalog.auth_token, '');
    assert.equal(c.catalog.public_url, 'http://localhost:8080');
    assert.equal(c.catalog.system_user, 'svc-system');
    assert.deepEqual(c.storage, {
      endpoint: 'http://127.0.0.1:9000',
      region: 'us-east-1',
      bucket: 'warehouse',
      access_key: '',
      secret_key: '',
      path_style: true,
    });
    assert.deepEqual(c.policy_service, { enabled: false, auth_token: '' });
    assert.deepEqual(c.engine, {
      max_rows: 100000,
      query_timeout_secs: 60,
      preview_rows: 100,
      results_prefix: 'query-results',
      results_retention_days: 7,
      concurrency: 4,
    });
    assert.equal(c.engines.provisioner, 'auto');
    assert.equal(c.engines.embedded, 'auto');
    assert.equal(c.engines.embedded_data_dir, '');
    assert.equal(c.engines.embedded_memory_limit, '1GB');
    assert.equal(c.engines.embedded_threads, 2);
    assert.equal(c.engines.embedded_max_databases, 16);
    assert.equal(c.engines.local_container.host, 'unix:///var/run/docker.sock');
    assert.equal(c.engines.local_container.network, '');
    assert.equal(c.engines.local_container.project, '');
    assert.equal(c.engines.local_container.callback_url, undefined);
    assert.deepEqual(c.engines.local_container.allowed_images, ['docker.io/trinodb/trino']);
    assert.deepEqual(c.audit, {
      enabled: true,
      retention_days: 90,
      channel_capacity: 8192,
      batch_size: 256,
      flush_interval_ms: 1000,
    });
    assert.equal(c.automation.enabled, true);
    assert.equal(c.automation.tick_interval_secs, 30);
    assert.deepEqual(c.automation.webhook_allow_hosts, []);
    assert.equal(c.automation.renderer_url, 'http://renderer:8080');
    assert.equal(c.automation.public_url, 'http://svc:8080');
    assert.equal(c.automation.browser_url, undefined);
    assert.equal(c.data_api.access_log_retention_days, 90);
    assert.equal(c.data_api.public_url, undefined);
    assert.equal(c.data_api.replicas, 1);
    assert.equal(c.data_api.shared_store_url, undefined);
    assert.equal(c.redis.url, 'redis://127.0.0.1:6379');
    assert.deepEqual(c.olap.jdbc_drivers, {});
  });

  test('workflow and its sub-tables', () => {
    const w = c.workflow;
    assert.equal(w.webhooks_enabled, false);
    assert.equal(w.worker_enabled, false);
    assert.equal(w.scheduler_enabled, false);
    assert.equal(w.tick_interval_secs, 1);
    assert.equal(w.batch, 8);
    assert.equal(w.reaper_interval_secs, 60);
    assert.equal(w.working_timeout_s, 3600);
    assert.equal(w.container_default_timeout_s, 3600);
    assert.equal(w.kill_poll_ms, 5000);
    assert.equal(w.trigger_interval_secs, 1);
    assert.equal(w.log_retention_days, 30);
    assert.equal(w.storage_retention_days, 30);
    assert.equal(w.kept_container_retention_days, 7);
    assert.equal(w.log_run_max_lines, 10000);
    assert.equal(w.log_run_max_bytes, 10485760);
    assert.equal(w.container_runner, 'none');
    assert.deepEqual(w.plugin_configurations, []);
    assert.deepEqual(w.storage, {
      prefix: 'workflow/',
      max_file_bytes: 1073741824,
      max_task_bytes: 5368709120,
      max_read_bytes: 10485760,
      max_namespace_files: 10000,
    });
    assert.equal(w.cluster.namespace, 'svc-tasks');
    assert.deepEqual(w.cluster.default_resources, {
      request: { cpu: '100m', memory: '128Mi', ephemeral_storage: '256Mi' },
      limit: { cpu: '1', memory: '512Mi', ephemeral_storage: '10Gi' },
    });
    assert.deepEqual(w.cluster.max_resources, {
      request: {},
      limit: { cpu: '2', memory: '2Gi', ephemeral_storage: '10Gi' },
    });
    assert.deepEqual(w.cluster.image_pull_secrets, []);
    assert.equal(w.cluster.run_as_user, 1000);
    assert.equal(w.cluster.helper_image, 'svc-task-helper:dev');
    assert.deepEqual(w.plugin_host, { jvm_max_heap: '384m', kill_grace_s: 15 });
    assert.equal(w.plugin_host.image, undefined);
  });

  test('apps, apps.pod, apps.storage', () => {
    const a = c.apps;
    assert.equal(a.max_rows, 10000);
    assert.equal(a.timeout_secs, 60);
    assert.equal(a.session_idle_secs, 1800);
    assert.equal(a.session_absolute_secs, 28800);
    assert.equal(a.rate_max, 20);
    assert.equal(a.rate_window_secs, 2);
    assert.equal(a.origin, '');
    assert.equal(a.service_origin, '');
    assert.equal(a.ticket_ttl_secs, 30);
    assert.equal(a.cookie_ttl_secs, 28800);
    assert.equal(a.listen, '0.0.0.0:8081');
    assert.deepEqual(a.pod, {
      launcher: 'none',
      ready_timeout_secs: 60,
      idle_secs: 1800,
      callback_url: '',
      namespace: 'svc-apps',
      image: 'svc-apps:dev',
      image_pull_policy: 'IfNotPresent',
      cpu_request: '250m',
      mem_request: '512Mi',
      cpu_limit: '1000m',
      mem_limit: '2Gi',
      command: [],
      work_dir: '/tmp/svc-apps',
      config_dir: '',
      venv_shim_dir: '',
      run_idle_secs: 300,
      run_session_cap: 8,
      run_kernel_mode: 'thread',
    });
    assert.equal(a.pod.pull_secret, undefined);
    assert.deepEqual(a.storage, { prefix: 'apps/' });
  });

  test('defaults are fresh objects on every call', () => {
    const a = defaultConfig();
    a.oidc.scopes.push('x');
    assert.deepEqual(defaultConfig().oidc.scopes, ['openid', 'email', 'profile']);
  });

  test('idpIssuer: idp.issuer, else catalog.public_url, trailing slash trimmed', () => {
    const x = defaultConfig();
    assert.equal(idpIssuer(x), 'http://localhost:8080');
    x.catalog.public_url = 'https://svc.example.com/';
    assert.equal(idpIssuer(x), 'https://svc.example.com');
    x.idp.issuer = 'https://idp.example.com/';
    assert.equal(idpIssuer(x), 'https://idp.example.com');
  });
});

// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------

describe('unknown keys', () => {
  test('ignored at the top level and in ordinary sections', () => {
    const c = load('typo = 1\n[bogus]\nx = 1\n[server]\nprot = 9000\n[apps.pod]\nbogus = 1\n[engines.local_container]\nbogus = 2\n');
    assert.deepEqual(c, defaultConfig());
    assert.equal((c as unknown as Record<string, unknown>).bogus, undefined);
    assert.equal((c.server as unknown as Record<string, unknown>).prot, undefined);
  });

  const strictFromFile: Array<[string, string]> = [
    ['[workflow.storage]\nmax_bytes = 1\n', 'workflow.storage.max_bytes'],
    ['[workflow.cluster]\nbogus = 1\n', 'workflow.cluster.bogus'],
    ['[workflow.cluster.default_resources]\ngpu = "1"\n', 'workflow.cluster.default_resources.gpu'],
    ['[workflow.cluster.default_resources.request]\ngpu = "1"\n', 'workflow.cluster.default_resources.request.gpu'],
    ['[workflow.cluster.max_resources.request]\ngpu = "1"\n', 'workflow.cluster.max_resources.request.gpu'],
    ['[workflow.cluster.max_resources.limit]\ngpu = "1"\n', 'workflow.cluster.max_resources.limit.gpu'],
    ['[workflow.plugin_host]\nheap = "1g"\n', 'workflow.plugin_host.heap'],
    ['[apps.storage]\nbucket = "x"\n', 'apps.storage.bucket'],
    ['[[workflow.plugin_configurations]]\ntype = "x"\nvalue = {}\n', 'workflow.plugin_configurations[0].value'],
  ];
  for (const [toml, key] of strictFromFile) {
    test(`rejected from svc.toml: ${key}`, () => {
      assert.equal(loadError(toml), `svc.toml: unknown key ${key}`);
    });
  }

  const strictFromEnv: Array<[string, string]> = [
    ['SVC_WORKFLOW__STORAGE__BOGUS', 'workflow.storage.bogus'],
    ['SVC_WORKFLOW__CLUSTER__BOGUS', 'workflow.cluster.bogus'],
    ['SVC_WORKFLOW__CLUSTER__DEFAULT_RESOURCES__REQUEST__GPU', 'workflow.cluster.default_resources.request.gpu'],
    ['SVC_WORKFLOW__CLUSTER__MAX_RESOURCES__LIMIT__GPU', 'workflow.cluster.max_resources.limit.gpu'],
    ['SVC_WORKFLOW__PLUGIN_HOST__BOGUS', 'workflow.plugin_host.bogus'],
    ['SVC_APPS__STORAGE__BOGUS', 'apps.storage.bogus'],
  ];
  for (const [name, key] of strictFromEnv) {
    test(`rejected from the environment: ${name}`, () => {
      assert.equal(loadError(null, { [name]: '1' }), `${name}: unknown key ${key}`);
    });
  }

  test('rejected inside a table or list given by a variable', () => {
    assert.equal(
      loadError(null, { SVC_WORKFLOW__STORAGE: '{prefix = "a/", bogus = 1}' }),
      'SVC_WORKFLOW__STORAGE: unknown key workflow.storage.bogus',
    );
    assert.equal(
      loadError(null, { SVC_WORKFLOW__PLUGIN_CONFIGURATIONS: '[{type = "x", extra = 1}]' }),
      'SVC_WORKFLOW__PLUGIN_CONFIGURATIONS: unknown key workflow.plugin_configurations[0].extra',
    );
  });

  test('a plugin configuration entry needs a type', () => {
    assert.equal(
      loadError('[[workflow.plugin_configurations]]\nvalues = {}\n'),
      'workflow.plugin_configurations[0].type is required (from svc.toml)',
    );
  });
});

// ---------------------------------------------------------------------------------------------

describe('value rules at load', () => {
  const bad: Array<[string, string | null, Record<string, string>, string]> = [
    ['workflow.storage.prefix must end with /', '[workflow.storage]\nprefix = "wf"\n', {},
      'workflow.storage.prefix must end with "/", got "wf" (from svc.toml)'],
    ['workflow.storage.prefix must not start with /', null, { SVC_WORKFLOW__STORAGE__PREFIX: '/wf/' },
      'workflow.storage.prefix must not start with "/", got "/wf/" (from SVC_WORKFLOW__STORAGE__PREFIX)'],
    ['workflow.storage.prefix at most 200 bytes', null, { SVC_WORKFLOW__STORAGE__PREFIX: `${'é'.repeat(100)}/` },
      `workflow.storage.prefix must be at most 200 bytes, got "${'é'.repeat(100)}/" (from SVC_WORKFLOW__STORAGE__PREFIX)`],
    ['apps.storage.prefix must end with /', '[apps.storage]\nprefix = "apps"\n', {},
      'apps.storage.prefix must end with "/", got "apps" (from svc.toml)'],
    ['apps.storage.prefix must not start with /', null, { SVC_APPS__STORAGE__PREFIX: '/apps/' },
      'apps.storage.prefix must not start with "/", got "/apps/" (from SVC_APPS__STORAGE__PREFIX)'],
    ['workflow.storage.max_read_bytes >= 4096', null, { SVC_WORKFLOW__STORAGE__MAX_READ_BYTES: '4095' },
      'workflow.storage.max_read_bytes must be >= 4096, got 4095 (from SVC_WORKFLOW__STORAGE__MAX_READ_BYTES)'],
    ['workflow.plugin_host.kill_grace_s >= 3', '[workflow.plugin_host]\nkill_grace_s = 2\n', {},
      'workflow.plugin_host.kill_grace_s must be >= 3, got 2 (from svc.toml)'],
    ['workflow.plugin_host.jvm_max_heap pattern', null, { SVC_WORKFLOW__PLUGIN_HOST__JVM_MAX_HEAP: '1G' },
      'workflow.plugin_host.jvm_max_heap must be digits and one optional unit letter k, m or g, got "1G" (from SVC_WORKFLOW__PLUGIN_HOST__JVM_MAX_HEAP)'],
    ['workflow.plugin_host.jvm_max_heap two letters', '[workflow.plugin_host]\njvm_max_heap = "384mb"\n', {},
      'workflow.plugin_host.jvm_max_heap must be digits and one optional unit letter k, m or g, got "384mb" (from svc.toml)'],
    ['workflow.cluster.run_as_user > 0', '[workflow.cluster]\nrun_as_user = 0\n', {},
      'workflow.cluster.run_as_user must be positive, got 0 (from svc.toml)'],
    ['apps.pod.idle_secs >= 60', null, { SVC_APPS__POD__IDLE_SECS: '59' },
      'apps.pod.idle_secs must be >= 60, got 59 (from SVC_APPS__POD__IDLE_SECS)'],
    ['apps.session_idle_secs <= apps.session_absolute_secs', '[apps]\nsession_idle_secs = 100\n', { SVC_APPS__SESSION_ABSOLUTE_SECS: '99' },
      'apps.session_idle_secs must not exceed apps.session_absolute_secs (99), got 100 (from svc.toml)'],
    ['apps.pod.run_session_cap >= 1', null, { SVC_APPS__POD__RUN_SESSION_CAP: '0' },
      'apps.pod.run_session_cap must be >= 1, got 0 (from SVC_APPS__POD__RUN_SESSION_CAP)'],
    ['engines.provisioner enum', null, { SVC_ENGINES__PROVISIONER: 'docker' },
      'engines.provisioner must be one of auto, cluster, local_container, none, got "docker" (from SVC_ENGINES__PROVISIONER)'],
    ['workflow.container_runner enum', '[workflow]\ncontainer_runner = "docker"\n', {},
      'workflow.container_runner must be one of none, local_container, cluster, got "docker" (from svc.toml)'],
    ['apps.pod.run_kernel_mode enum', null, { SVC_APPS__POD__RUN_KERNEL_MODE: 'process' },
      'apps.pod.run_kernel_mode must be one of thread, forced_ipc, got "process" (from SVC_APPS__POD__RUN_KERNEL_MODE)'],
    ['apps.pod.image_pull_policy enum (case matters)', null, { SVC_APPS__POD__IMAGE_PULL_POLICY: 'always' },
      'apps.pod.image_pull_policy must be one of Always, IfNotPresent, Never, got "always" (from SVC_APPS__POD__IMAGE_PULL_POLICY)'],
    ['local_container needs network', null, { SVC_ENGINES__PROVISIONER: 'local_container', SVC_ENGINES__LOCAL_CONTAINER__PROJECT: 'p' },
      'engines.local_container.network is required when engines.provisioner is local_container (from default)'],
    ['local_container needs project', null, { SVC_ENGINES__PROVISIONER: 'local_container', SVC_ENGINES__LOCAL_CONTAINER__NETWORK: 'n', SVC_ENGINES__LOCAL_CONTAINER__PROJECT: '' },
      'engines.local_container.project is required when engines.provisioner is local_container (from SVC_ENGINES__LOCAL_CONTAINER__PROJECT)'],
    ['local_container.callback_url not empty', null, { SVC_ENGINES__LOCAL_CONTAINER__CALLBACK_URL: '' },
      'engines.local_container.callback_url must not be empty (leave it unset instead), got "" (from SVC_ENGINES__LOCAL_CONTAINER__CALLBACK_URL)'],
    ['local_container.allowed_images not empty', '[engines.local_container]\nallowed_images = []\n', {},
      'engines.local_container.allowed_images must not be empty (from svc.toml)'],
    ['local_container.host scheme', null, { SVC_ENGINES__LOCAL_CONTAINER__HOST: '/var/run/docker.sock' },
      'engines.local_container.host must start with unix://, tcp:// or http://, got "/var/run/docker.sock" (from SVC_ENGINES__LOCAL_CONTAINER__HOST)'],
    ['server.port 0', null, { SVC_SERVER__PORT: '0' },
      'server.port must be between 1 and 65535, got 0 (from SVC_SERVER__PORT)'],
    ['server.port 65536', '[server]\nport = 65536\n', {},
      'server.port must be between 1 and 65535, got 65536 (from svc.toml)'],
    ['counts are non-negative', '[workflow]\nlog_retention_days = -1\n', {},
      'workflow.log_retention_days must be >= 0, got -1 (from svc.toml)'],
    ['audit batches hold at least one event', '[audit]\nbatch_size = 0\n', {},
      'audit.batch_size must be >= 1, got 0 (from svc.toml)'],
    ['counts are integers', '[workflow]\nbatch = 1.5\n', {},
      'workflow.batch must be an integer, got 1.5 (from svc.toml)'],
    ['apps.listen host:port', null, { SVC_APPS__LISTEN: '0.0.0.0' },
      'apps.listen must be host:port with a port between 1 and 65535, got "0.0.0.0" (from SVC_APPS__LISTEN)'],
  ];
  test('audit.retention_days may be 0 or negative (no pruning)', () => {
    assert.equal(load('[audit]\nretention_days = -1\n').audit.retention_days, -1);
  });
  for (const [name, toml, env, message] of bad) {
    test(name, () => assert.equal(loadError(toml, env), message));
  }

  test('values on the edge of each rule are accepted', () => {
    const c = load(
      [
        '[workflow.storage]',
        `prefix = "${'a'.repeat(199)}/"`,
        'max_read_bytes = 4096',
        '[workflow.plugin_host]',
        'kill_grace_s = 3',
        'jvm_max_heap = "2g"',
        '[workflow.cluster]',
        'run_as_user = 1',
        '[apps]',
        'session_idle_secs = 500',
        'session_absolute_secs = 500',
        '[apps.pod]',
        'idle_secs = 60',
        'run_session_cap = 1',
        'run_kernel_mode = "forced_ipc"',
        'image_pull_policy = "Never"',
        '[engines]',
        'provisioner = "local_container"',
        '[engines.local_container]',
        'network = "n"',
        'project = "p"',
        'callback_url = "http://host.containers.internal:8080"',
        'host = "http://127.0.0.1:2375"',
        '[server]',
        'port = 65535',
      ].join('\n'),
    );
    assert.equal(c.workflow.storage.prefix.length, 200);
    assert.equal(c.workflow.plugin_host.jvm_max_heap, '2g');
    assert.equal(c.engines.provisioner, 'local_container');
    assert.equal(c.server.port, 65535);
    assert.equal(load(null, { SVC_WORKFLOW__PLUGIN_HOST__JVM_MAX_HEAP: '1024' }).workflow.plugin_host.jvm_max_heap, '1024');
  });

  test('apps.pod.launcher and workflow.kill_poll_ms are left to the startup checks', () => {
    const c = load(null, { SVC_APPS__POD__LAUNCHER: 'docker', SVC_WORKFLOW__KILL_POLL_MS: '50' });
    assert.equal(c.apps.pod.launcher, 'docker');
    assert.equal(c.workflow.kill_poll_ms, 50);
  });
});

// ---------------------------------------------------------------------------------------------

describe('startup checks', () => {
  const key64 = Buffer.alloc(64, 7).toString('base64');
  const key32 = Buffer.alloc(32, 9).toString('base64');
  const APPS_PREFIX = 'apps.origin must differ from apps.service_origin, both must be scheme://host[:port] and the apps TTLs >= 1: ';
  const LAUNCHER_PREFIX = 'apps.pod.launcher must be none, subprocess or cluster with the keys each needs: ';

  /** Defaults plus the always-required storage credentials: passes every check. */
  function good(): Config {
    const c = defaultConfig();
    c.storage.access_key = 'ak';
    c.storage.secret_key = 'sk';
    return c;
  }

  function checkError(c: Config): string {
    try {
      startupChecks(c);
    } catch (err) {
      assert.ok(err instanceof ConfigError);
      assert.ok(!err.message.includes('\n'));
      return err.message;
    }
    assert.fail('expected startupChecks to throw');
  }

  test('a complete configuration passes', () => {
    assert.doesNotThrow(() => startupChecks(good()));
  });

  test('1. oidc.enabled requires security.secret_key of >= 64 base64 bytes', () => {
    const msg = 'oidc.enabled requires security.secret_key (base64, >=64 bytes)';
    const c = good();
    c.oidc.enabled = true;
    c.oidc.issuer_url = 'https://idp.example.com';
    c.oidc.client_id = 'svc';
    assert.equal(checkError(c), msg);
    for (const bad of [
      Buffer.alloc(63).toString('base64'), // too short
      `${key64}=`, // wrong padding
      Buffer.alloc(64, 0xff).toString('base64').replace(/=+$/, ''), // standard alphabet ('/') without its padding
      `${key64.slice(0, 10)}*${key64.slice(11)}`, // outside the alphabet
      ` ${key64}`,
      `${key64.slice(0, 40)}+${key64.slice(41, 50)}_${key64.slice(51)}`, // mixed alphabets
    ]) {
      c.security.secret_key = bad;
      assert.equal(checkError(c), msg, bad);
    }
    c.security.secret_key = key64;
    assert.doesNotThrow(() => startupChecks(c));
    c.security.secret_key = Buffer.alloc(64, 0xfb).toString('base64url'); // url-safe, unpadded
    assert.doesNotThrow(() => startupChecks(c));
    c.security.secret_key = '';
    c.oidc.enabled = false;
    assert.doesNotThrow(() => startupChecks(c));
  });

  test('2. oidc.enabled requires issuer_url and client_id', () => {
    const msg = 'oidc.enabled requires issuer_url and client_id';
    const c = good();
    c.oidc.enabled = true;
    c.security.secret_key = key64;
    assert.equal(checkError(c), msg);
    c.oidc.issuer_url = 'https://idp.example.com';
    assert.equal(checkError(c), msg);
    c.oidc.client_id = 'svc';
    c.oidc.issuer_url = '';
    assert.equal(checkError(c), msg);
    c.oidc.issuer_url = 'https://idp.example.com';
    assert.doesNotThrow(() => startupChecks(c));
  });

  test('3. catalog.enabled requires warehouse and auth_token', () => {
    const msg = 'catalog.enabled requires warehouse and auth_token';
    const c = good();
    c.catalog.enabled = true;
    assert.equal(checkError(c), msg);
    c.catalog.auth_token = 't';
    c.catalog.warehouse = '';
    assert.equal(checkError(c), msg);
    c.catalog.warehouse = 's3://w';
    assert.doesNotThrow(() => startupChecks(c));
  });

  test('4. catalog.enabled requires storage access_key/secret_key/bucket', () => {
    const msg = 'catalog.enabled requires storage access_key/secret_key/bucket';
    for (const k of ['access_key', 'secret_key', 'bucket'] as const) {
      const c = good();
      c.catalog.enabled = true;
      c.catalog.auth_token = 't';
      c.storage[k] = '';
      assert.equal(checkError(c), msg, k);
    }
  });

  test('5. secrets.master_key must be base64 of >= 32 bytes', () => {
    const msg = 'secrets.master_key must be base64 of >=32 bytes';
    const c = good();
    for (const bad of ['not base64!', Buffer.alloc(31).toString('base64'), 'abc']) {
      c.secrets.master_key = bad;
      assert.equal(checkError(c), msg, bad);
    }
    c.secrets.master_key = key32;
    assert.doesNotThrow(() => startupChecks(c));
    c.secrets.master_key = '';
    assert.doesNotThrow(() => startupChecks(c));
  });

  test('6. always: storage bucket, access_key, secret_key', () => {
    const msg =
      'the apps API requires [storage] bucket, access_key, secret_key (it stores content in the bucket); set them in svc.toml or SVC_STORAGE__*';
    assert.equal(checkError(defaultConfig()), msg);
    assert.ok(msg.startsWith('the apps API requires [storage] bucket, access_key, secret_key'));
    for (const k of ['access_key', 'secret_key', 'bucket'] as const) {
      const c = good();
      c.storage[k] = '';
      assert.equal(checkError(c), msg, k);
    }
  });

  test('7. engine limits', () => {
    const msg = 'engine.max_rows and engine.query_timeout_secs must be >= 1';
    let c = good();
    c.engine.max_rows = 0;
    assert.equal(checkError(c), msg);
    c = good();
    c.engine.query_timeout_secs = 0;
    assert.equal(checkError(c), msg);
    c = good();
    c.engine.max_rows = 50;
    assert.equal(checkError(c), 'engine.preview_rows must be <= engine.max_rows');
    c.engine.preview_rows = 50;
    assert.doesNotThrow(() => startupChecks(c));
  });

  test('8. workflow.kill_poll_ms minimum 100', () => {
    const c = good();
    c.workflow.kill_poll_ms = 99;
    assert.equal(checkError(c), 'workflow.kill_poll_ms is 99, below the minimum 100');
    c.workflow.kill_poll_ms = 100;
    assert.doesNotThrow(() => startupChecks(c));
  });

  test('9. container_runner other than none needs storage and plugin_host.image', () => {
    const msg =
      'workflow.container_runner other than none requires [storage] bucket, access_key, secret_key and [workflow.plugin_host] image';
    for (const runner of ['cluster', 'local_container'] as const) {
      const c = good();
      c.workflow.container_runner = runner;
      assert.equal(checkError(c), msg);
      assert.ok(checkError(c).startsWith('workflow.container_runner other than none requires [storage]'));
      c.workflow.plugin_host.image = '';
      assert.equal(checkError(c), msg);
      c.workflow.plugin_host.image = 'svc-plugin-host:1';
      assert.doesNotThrow(() => startupChecks(c));
    }
  });

  test('10. apps.origin: origins and TTLs', () => {
    const ok = (): Config => {
      const c = good();
      c.apps.origin = 'https://apps.example.com';
      c.apps.service_origin = 'https://svc.example.com:8443';
      return c;
    };
    assert.doesNotThrow(() => startupChecks(ok()));
    const cases: Array<[string, (c: Config) => void, string]> = [
      ['service_origin empty', (c) => { c.apps.service_origin = ''; }, 'apps.service_origin is empty'],
      ['same origin', (c) => { c.apps.service_origin = 'https://APPS.example.com:443'; },
        'apps.origin and apps.service_origin are both https://apps.example.com'],
      ['origin with a path', (c) => { c.apps.origin = 'https://apps.example.com/x'; },
        'apps.origin "https://apps.example.com/x" is not scheme://host[:port] (http or https, no path)'],
      ['origin with a trailing slash', (c) => { c.apps.origin = 'https://apps.example.com/'; },
        'apps.origin "https://apps.example.com/" is not scheme://host[:port] (http or https, no path)'],
      ['service origin with a query', (c) => { c.apps.service_origin = 'https://svc.example.com?a=1'; },
        'apps.service_origin "https://svc.example.com?a=1" is not scheme://host[:port] (http or https, no path)'],
      ['other scheme', (c) => { c.apps.origin = 'ftp://apps.example.com'; },
        'apps.origin "ftp://apps.example.com" is not scheme://host[:port] (http or https, no path)'],
      ['bad port', (c) => { c.apps.origin = 'http://apps.example.com:99999'; },
        'apps.origin "http://apps.example.com:99999" is not scheme://host[:port] (http or https, no path)'],
      ['ticket ttl', (c) => { c.apps.ticket_ttl_secs = 0; }, 'apps.ticket_ttl_secs is 0'],
      ['cookie ttl', (c) => { c.apps.cookie_ttl_secs = 0; }, 'apps.cookie_ttl_secs is 0'],
      ['idle ttl', (c) => { c.apps.session_idle_secs = 0; }, 'apps.session_idle_secs is 0'],
      ['absolute ttl', (c) => { c.apps.session_idle_secs = 0; c.apps.session_absolute_secs = 0; },
        'apps.session_idle_secs is 0'],
    ];
    for (const [name, mutate, problem] of cases) {
      const c = ok();
      mutate(c);
      const m = checkError(c);
      assert.ok(m.startsWith('apps.origin must differ from apps.service_origin'), name);
      assert.equal(m, APPS_PREFIX + problem, name);
    }
    // TTLs are only checked with apps.origin set
    const off = good();
    off.apps.ticket_ttl_secs = 0;
    assert.doesNotThrow(() => startupChecks(off));
  });

  test('11. apps.pod.launcher', () => {
    const cases: Array<[string, (c: Config) => void, string]> = [
      ['unknown launcher', (c) => { c.apps.pod.launcher = 'docker'; }, 'apps.pod.launcher is "docker"'],
      ['subprocess without command', (c) => { c.apps.pod.launcher = 'subprocess'; }, 'subprocess needs apps.pod.command'],
      ['subprocess without origin', (c) => { c.apps.pod.launcher = 'subprocess'; c.apps.pod.command = ['python']; },
        'subprocess needs apps.origin'],
      ['cluster without origin', (c) => { c.apps.pod.launcher = 'cluster'; }, 'cluster needs apps.origin'],
      ['cluster without callback_url', (c) => {
        c.apps.pod.launcher = 'cluster';
        c.apps.origin = 'https://apps.example.com';
        c.apps.service_origin = 'https://svc.example.com';
      }, 'cluster needs apps.pod.callback_url'],
    ];
    for (const [name, mutate, problem] of cases) {
      const c = good();
      mutate(c);
      const m = checkError(c);
      assert.ok(m.startsWith('apps.pod.launcher must be none, subprocess or cluster'), name);
      assert.equal(m, LAUNCHER_PREFIX + problem, name);
    }
    for (const launcher of ['subprocess', 'cluster']) {
      const c = good();
      c.apps.pod.launcher = launcher;
      c.apps.pod.command = ['python', '-m', 'apps'];
      c.apps.origin = 'https://apps.example.com';
      c.apps.service_origin = 'https://svc.example.com';
      c.apps.pod.callback_url = 'http://svc:8080';
      assert.doesNotThrow(() => startupChecks(c));
    }
  });

  test('12. data_api.replicas above 1 requires shared_store_url', () => {
    const c = good();
    c.data_api.replicas = 2;
    assert.equal(checkError(c), 'data_api.replicas above 1 requires data_api.shared_store_url');
    c.data_api.shared_store_url = 'redis://kv:6379';
    assert.doesNotThrow(() => startupChecks(c));
  });

  test('checks run in order and report the first failure', () => {
    const c = defaultConfig(); // storage credentials missing (6)
    c.oidc.enabled = true; // (1)
    c.data_api.replicas = 3; // (12)
    c.workflow.kill_poll_ms = 1; // (8)
    assert.equal(checkError(c), 'oidc.enabled requires security.secret_key (base64, >=64 bytes)');
    c.oidc.enabled = false;
    assert.match(checkError(c), /^the apps API requires/);
    c.storage.access_key = 'a';
    c.storage.secret_key = 'b';
    assert.equal(checkError(c), 'workflow.kill_poll_ms is 1, below the minimum 100');
    c.workflow.kill_poll_ms = 100;
    assert.equal(checkError(c), 'data_api.replicas above 1 requires data_api.shared_store_url');
  });

  test('a configuration from file and environment passes end to end', () => {
    const c = load('[storage]\naccess_key = "ak"\n', {
      SVC_STORAGE__SECRET_KEY: 'sk',
      SVC_OIDC__ENABLED: 'true',
      SVC_OIDC__ISSUER_URL: 'https://idp.example.com',
      SVC_OIDC__CLIENT_ID: 'svc',
      SVC_SECURITY__SECRET_KEY: key64,
      SVC_SECRETS__MASTER_KEY: key32,
    });
    assert.doesNotThrow(() => startupChecks(c));
  });
});

// ---------------------------------------------------------------------------------------------

describe('docs', () => {
  const md = renderConfigDocs();

  test('docs/configuration.md equals renderConfigDocs()', () => {
    const file = readFileSync(join(ROOT, 'docs', 'configuration.md'), 'utf8');
    assert.equal(file, md, 'regenerate with: npx tsx src/config/docs.ts > docs/configuration.md');
  });

  test('every schema leaf appears with its env variable and a description', () => {
    const leaves = listLeaves();
    assert.ok(leaves.length >= 140, `only ${leaves.length} leaves`);
    for (const leaf of leaves) {
      const key = leaf.path.join('.');
      const row = md.split('\n').find((l) => l.startsWith(`| \`${key}\` |`));
      assert.ok(row, `no row for ${key}`);
      assert.ok(row.includes(`\`${envName(leaf.path)}\``), `no env name for ${key}`);
      assert.ok((leaf.info.meta.description ?? '').length > 0, `no description for ${key}`);
    }
  });

  test('named rows, sections and notes', () => {
    for (const s of [
      '`SVC_WORKFLOW__STORAGE__MAX_FILE_BYTES`',
      '`SVC_WORKFLOW__CLUSTER__DEFAULT_RESOURCES__REQUEST__EPHEMERAL_STORAGE`',
      '`SVC_DATA_API__PUBLIC_URL`',
      '`SVC_RATE_LIMIT__LOGIN_MAX_ATTEMPTS`',
      '`SVC_OLAP__JDBC_DRIVERS__<DIALECT>__DRIVER_URL`',
      '| `redis.url` | `redis://127.0.0.1:6379` | `SVC_REDIS__URL` |',
      '| `server.port` | `8080` | `SVC_SERVER__PORT` |',
      '| `oidc.scopes` | `["openid","email","profile"]` | `SVC_OIDC__SCOPES` |',
      '**Addition to the specification:**',
      'SVC_OIDC__SCOPES=\'["openid","email","profile"]\'',
      '**Required with oidc.enabled.**',
      '### [workflow]',
      '#### [workflow.storage]',
      '#### [apps.pod]',
      'oidc.enabled requires security.secret_key (base64, >=64 bytes)',
    ]) {
      assert.ok(md.includes(s), s);
    }
  });

  test('docs.ts prints the markdown when run as a script', () => {
    const out = execFileSync(process.execPath, ['--import', 'tsx', join(ROOT, 'src', 'config', 'docs.ts')], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    assert.equal(out, md);
  });

  test('importing docs.ts prints nothing', () => {
    const out = execFileSync(
      process.execPath,
      ['--import', 'tsx', '-e', `import(${JSON.stringify(join(ROOT, 'src', 'config', 'docs.ts'))})`],
      { cwd: ROOT, encoding: 'utf8' },
    );
    assert.equal(out, '');
  });
});
