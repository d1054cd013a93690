// Query execution and engine provisioning (SPEC 8 engine, engines, olap).
import { z } from 'zod';
import { meta, count, str, optStr, section, strRule, oneOf } from '../builders.js';

export const engine = section('query execution', {
  max_rows: count(100000, 'most rows a query returns; at least 1 (startup check)'),
  query_timeout_secs: count(60, 'query timeout; at least 1 (startup check)'),
  preview_rows: count(100, 'rows of a preview; at most `engine.max_rows` (startup check)'),
  results_prefix: str('query-results', 'object key prefix of query results inside the bucket'),
});

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
