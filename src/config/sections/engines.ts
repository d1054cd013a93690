// Query execution and engine provisioning (SPEC 8 engine, engines, olap).
import { z } from 'zod';
import { meta, count, atLeast, str, optStr, section, strRule, oneOf } from '../builders.js';

export const engine = section('query execution', {
  max_rows: count(100000, 'most rows a query returns; at least 1 (startup check)'),
  query_timeout_secs: count(60, 'query timeout; at least 1 (startup check)'),
  preview_rows: count(100, 'rows of a preview; at most `engine.max_rows` (startup check)'),
  results_prefix: str('query-results', 'object key prefix of query results inside the bucket'),
  results_retention_days: count(7, 'days a query result stays in the object store after the query ended; 0 keeps results for ever'),
  max_result_bytes: atLeast(1024, 64 * 1024 * 1024, 'most bytes of rows (measured as JSON) a query result holds on every path (query API, data-apps gateway, Data API, alerts, reports); a larger result is cut there and marked truncated'),
  concurrency: atLeast(1, 4, 'queries each replica runs at once (the embedded engine and the `queries` job worker); more wait queued'),
});

// The embedded engine: DuckDB in process, one database per workspace (docs/engines.md).
const embedded = {
  embedded: oneOf(['auto', 'on', 'off'], 'auto', 'embedded DuckDB engine: `auto` offers it when the resolved provisioner is `none`, `on` always, `off` never'),
  embedded_data_dir: str('', 'directory of the embedded databases (one file per workspace); empty keeps them in memory, lost on restart or eviction'),
  embedded_memory_limit: strRule('1GB', 'DuckDB memory_limit of each workspace database', (v) => /^\d+(\.\d+)?\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)$/i.test(v), 'must be a size such as 512MB or 1GB'),
  embedded_threads: atLeast(1, 2, 'DuckDB threads of each workspace database'),
  embedded_cache_bytes: atLeast(64 * 1024 * 1024, 4 * 1024 * 1024 * 1024, 'bytes of catalog table files the embedded engine keeps on local disk to read them (under embedded_data_dir/cache, else a temporary folder), least recently used out first; a query needing more at once is refused'),
  embedded_max_databases: atLeast(1, 16, 'workspace databases open at once; the least recently used idle one is closed beyond it'),
};

const local_container = z
  .object({
    host: strRule(
      'unix:///var/run/docker.sock',
      'container API address; starts with `unix://`, `tcp://` or `http://`',
      (v) => /^(unix|tcp|http):\/\//.test(v),
      'must start with unix://, tcp:// or http://',
    ),
    network: str('', 'container network of engine containers', 'with engines.provisioner = local_container'),
    project: str(
      '',
      'value of the `svc.project` label on every engine container; containers with another project are never touched',
      'with engines.provisioner = local_container',
    ),
    callback_url: z
      .string()
      .min(1, { error: 'must not be empty (leave it unset instead)' })
      .optional()
      .meta(meta('how engine containers reach the service; unset by default; an empty value is refused')),
    allowed_images: z
      .array(z.string().min(1, { error: 'must not contain an empty image repository' }))
      .min(1, { error: 'must not be empty' })
      .default(() => ['docker.io/trinodb/trino'])
      .meta(meta('image repositories (tag excluded) engines may run; must not be empty')),
  })
  .prefault({})
  .meta(meta('engines on a local container engine (development)'));

export const engines = z.object({
  provisioner: oneOf(
    ['auto', 'cluster', 'local_container', 'none'],
    'auto',
    '`auto` uses the cluster when the service runs in one or a cluster configuration is found and never picks `local_container`; `cluster`, `local_container`, `none` choose explicitly',
  ),
  local_container,
  ...embedded,
}).superRefine((v, ctx) => {
  if (v.provisioner !== 'local_container') return;
  for (const key of ['network', 'project'] as const) {
    if (typeof v.local_container?.[key] === 'string' && v.local_container[key] === '') {
      ctx.addIssue({
        code: 'custom',
        path: ['local_container', key],
        message: 'is required when engines.provisioner is local_container',
      });
    }
  }
}).prefault({}).meta(meta('provisioning of query engines'));

const jdbcDriver = z
  .object({
    driver_url: optStr('repoints the driver archive to an internal mirror or a `file:///` path'),
    driver_class: optStr(
      'driver class for that dialect; a pinned driver is compiled in for each of six dialects and this section only repoints it',
    ),
  })
  .meta(meta('driver of one dialect'));

export const olap = section('repointing of database-driver artifacts for an analytic engine', {
  jdbc_drivers: z
    // dialect names are lower-cased, so `[olap.jdbc_drivers.Postgres]` and
    // SVC_OLAP__JDBC_DRIVERS__POSTGRES__* address the same entry
    .record(z.string().transform((k) => k.toLowerCase()), jdbcDriver)
    .default(() => ({}))
    .meta(meta('drivers by dialect name (lower-cased)')),
});
