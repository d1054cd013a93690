// The workflow engine and its strict sub-tables (SPEC 8 workflow, workflow.storage,
// workflow.cluster, workflow.plugin_host, workflow.plugin_configurations).
import { z } from 'zod';
import { meta, count, atLeast, str, optStr, bool, strList, section, strRule, keyPrefix, oneOf, resources } from '../builders.js';

const workflowStorage = z
  .strictObject({
    prefix: keyPrefix('workflow/', 'key prefix of execution files; ends with `/`, does not start with `/`, at most 200 bytes', 200),
    max_file_bytes: count(1073741824, 'largest single file (1 GiB)'),
    max_task_bytes: count(5368709120, 'most bytes one task run writes (5 GiB)'),
    max_read_bytes: atLeast(4096, 10485760, 'most bytes a read() returns into a template render (10 MiB); minimum 4096'),
    max_namespace_files: count(10000, 'most namespace files one listing, search or namespace-file operation sees'),
  })
  .prefault({})
  .meta(meta('files of executions in the object store'));

const workflowCluster = z
  .strictObject({
    namespace: str('svc-tasks', 'namespace of task pods'),
    default_resources: z
      .strictObject({
        request: resources({ cpu: '100m', memory: '128Mi', ephemeral_storage: '256Mi' }, 'request'),
        limit: resources({ cpu: '1', memory: '512Mi', ephemeral_storage: '10Gi' }, 'limit'),
      })
      .prefault({})
      .meta(meta('applied when the task\'s taskRunner.resources says nothing')),
    max_resources: z
      .strictObject({
        request: z
          .strictObject({
            cpu: optStr('largest CPU request; unset means no cap'),
            memory: optStr('largest memory request; unset means no cap'),
            ephemeral_storage: optStr('largest ephemeral storage request; unset means no cap'),
          })
          .prefault({})
          .meta(meta('request caps (none by default)')),
        limit: resources({ cpu: '2', memory: '2Gi', ephemeral_storage: '10Gi' }, 'limit cap'),
      })
      .prefault({})
      .meta(meta('larger asks are capped')),
    image_pull_secrets: strList([], 'existing pull secrets in the task namespace, attached to every task pod'),
    run_as_user: z
      .number()
      .int()
      .min(1, { error: 'must be positive' })
      .default(1000)
      .meta(meta('uid of every container in a task pod; must be positive')),
    helper_image: str('svc-task-helper:dev', 'image moving input and output files'),
  })
  .prefault({})
  .meta(meta('task pods; read only when `workflow.container_runner` is `cluster`; not settable by flow authors'));

const pluginHost = z
  .strictObject({
    image: optStr('image that runs plugin tasks', 'when workflow.container_runner is not none'),
    jvm_max_heap: strRule(
      '384m',
      'maximum JVM heap of the plugin host: digits and one optional unit letter k, m or g',
      (v) => /^[0-9]+[kmg]?$/.test(v),
      'must be digits and one optional unit letter k, m or g',
    ),
    kill_grace_s: atLeast(3, 15, 'seconds from SIGTERM to SIGKILL for a timed-out plugin task; minimum 3'),
  })
  .prefault({})
  .meta(meta('the container running plugin tasks'));

const pluginConfiguration = z.strictObject({
  type: z.string().meta(meta('plugin type the entry applies to')),
  values: z
    .record(z.string(), z.unknown())
    .default(() => ({}))
    .meta(meta('plugin values, e.g. `allowed-images`, `allowed-types`')),
});

export const workflow = section('workflow engine', {
  webhooks_enabled: bool(false, 'mount anonymous webhook routes'),
  worker_enabled: bool(false, 'start the claim loop and lease reaper'),
  scheduler_enabled: bool(false, 'start the trigger loop (cron schedules and flow triggers); needs the worker'),
  tick_interval_secs: count(1, 'claim tick'),
  batch: count(8, 'most task runs per claim tick'),
  reaper_interval_secs: count(60, 'lease reaper interval'),
  working_timeout_s: count(3600, 'lease time before the reaper hands the run back'),
  container_default_timeout_s: count(
    3600,
    'timeout of a script or container task declaring none; other task types are unbounded',
  ),
  kill_poll_ms: count(5000, 'interval of kill-request checks; minimum 100 (startup check)'),
  trigger_interval_secs: count(1, 'trigger loop interval'),
  log_retention_days: count(30, 'task log lines older are deleted hourly; 0 keeps for ever'),
  storage_retention_days: count(30, 'execution files kept this long after the execution ends; 0 keeps for ever'),
  kept_container_retention_days: count(
    7,
    'life of a container or pod kept with taskRunner.delete false; 0 keeps for ever',
  ),
  log_run_max_lines: count(
    10000,
    'log lines per task-run attempt; beyond it the task continues and one warning line states how many were withheld',
  ),
  log_run_max_bytes: count(10485760, 'log bytes per task-run attempt (10 MiB)'),
  foreach_max_items: count(1000, 'most items a foreach iterates; a longer list fails the foreach task run'),
  foreach_max_concurrency: count(64, 'most iterations of one foreach running at once; a larger `concurrency` is lowered to it'),
  container_runner: oneOf(
    ['none', 'local_container', 'cluster'],
    'none',
    '`none` (no script handler), `local_container` (development only), `cluster` (one pod per task-run attempt); anything but `none` needs the storage credentials and `workflow.plugin_host.image`',
  ),
  plugin_configurations: z
    .array(pluginConfiguration)
    .default(() => [])
    .meta(
      meta(
        'list of tables with `type` (string) and `values` (table); unknown keys in an entry are rejected; read values: `allowed-images` (glob patterns for script task images; empty allows none) and, on the plugin-ecosystem entry, `allowed-types` (glob patterns for plugin task types)',
      ),
    ),
  storage: workflowStorage,
  cluster: workflowCluster,
  plugin_host: pluginHost,
});
