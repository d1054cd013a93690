// Configuration layer: what a load refuses. Unknown keys in the strict sections and the value
// rules checked while loading, each failure one line naming the key and where it came from.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { defaultConfig } from '../src/config/index.js';
import { load, loadError } from './helpers/config.js';

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
