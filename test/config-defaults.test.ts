// Configuration layer: the defaults of every section (a fresh object on each call) and the issuer
// derived from them.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { configSchema, defaultConfig, idpIssuer } from '../src/config/index.js';
import { load } from './helpers/config.js';

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
    assert.equal(c.catalog.manifest_cache_bytes, 64 * 1024 * 1024);
    assert.equal(c.catalog.plan_wait_ms, 2000);
    assert.equal(c.catalog.plan_task_files, 1000);
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
      max_result_bytes: 67108864,
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
