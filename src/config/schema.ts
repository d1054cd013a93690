// The single source of every configuration key, its default, its value rules and its
// description (SPEC part 8, plus the [redis] addition). The loader (load.ts), the environment
// mapping (env.ts), the startup checks (checks.ts) and the generated reference
// (docs.ts -> docs/configuration.md) all follow from this schema.
//
// Keys are snake_case exactly as in svc.toml. Plain `z.object` sections drop unknown keys
// silently (SPEC 1.5); `z.strictObject` tables reject them.
import { z } from 'zod';

/** A configuration problem. The message is one line naming the source and the problem. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message.replace(/\s*[\r\n]+\s*/g, ' ').trim());
    this.name = 'ConfigError';
  }
}

/** Extra metadata every key carries: `description` is rendered in the docs; `required`
 * names the condition under which an empty value stops the server. */
export type KeyMeta = {
  description: string;
  required?: string;
};

// ---------- small builders ----------

const meta = (description: string, required?: string): KeyMeta =>
  required === undefined ? { description } : { description, required };

/** Non-negative integer with a default. */
function count(def: number, description: string, required?: string) {
  return z
    .number()
    .int()
    .min(0, { error: 'must be >= 0' })
    .default(def)
    .meta(meta(description, required));
}

/** Integer with a lower bound. */
function atLeast(min: number, def: number, description: string) {
  return z
    .number()
    .int()
    .min(min, { error: `must be >= ${min}` })
    .default(def)
    .meta(meta(description));
}

function str(def: string, description: string, required?: string) {
  return z.string().default(def).meta(meta(description, required));
}

function optStr(description: string, required?: string) {
  return z.string().optional().meta(meta(description, required));
}

function bool(def: boolean, description: string) {
  return z.boolean().default(def).meta(meta(description));
}

function strList(def: readonly string[], description: string, required?: string) {
  return z
    .array(z.string())
    .default(() => [...def])
    .meta(meta(description, required));
}

function section<T extends z.ZodRawShape>(description: string, shape: T) {
  // every key of a section has a default, so an absent section parses from {}
  return z.object(shape).prefault({} as never).meta(meta(description));
}

/** String with a value rule checked on every value, the default included. */
function strRule(def: string, description: string, ok: (v: string) => boolean, error: string, required?: string) {
  return z.string().refine(ok, { error }).default(def).meta(meta(description, required));
}

/** Object-store style key prefix: ends with `/`, does not start with `/`. */
function keyPrefix(def: string, description: string, maxBytes?: number) {
  let s = z
    .string()
    .refine((v) => v.endsWith('/'), { error: 'must end with "/"' })
    .refine((v) => !v.startsWith('/'), { error: 'must not start with "/"' });
  if (maxBytes !== undefined) {
    s = s.refine((v) => Buffer.byteLength(v, 'utf8') <= maxBytes, {
      error: `must be at most ${maxBytes} bytes`,
    });
  }
  return s.default(def).meta(meta(description));
}

function oneOf<const T extends readonly [string, ...string[]]>(values: T, def: T[number], description: string) {
  return z
    .enum(values, { error: `must be one of ${values.join(', ')}` })
    .default(def as never)
    .meta(meta(description));
}

/** Kubernetes-style resource quantities of one container (request or limit). */
function resources(
  def: { cpu: string; memory: string; ephemeral_storage: string },
  what: string,
) {
  return z
    .strictObject({
      cpu: str(def.cpu, `CPU ${what}`),
      memory: str(def.memory, `memory ${what}`),
      ephemeral_storage: str(def.ephemeral_storage, `ephemeral storage ${what}`),
    })
    .prefault({})
    .meta(meta(`${what} of a task container`));
}

// ---------- sections ----------

const server = section('HTTP listener', {
  host: str('0.0.0.0', 'bind address'),
  port: z
    .number()
    .int()
    .min(1, { error: 'must be between 1 and 65535' })
    .max(65535, { error: 'must be between 1 and 65535' })
    .default(8080)
    .meta(meta('HTTP port (1..65535)')),
});

const database = section('metadata database', {
  url: str('postgres://svc:svc@127.0.0.1:5432/svc', 'metadata database URL; migrations run against it'),
  max_connections: count(10, 'pool size'),
});

const log = section('logging', {
  filter: str('info', 'log filter directive; an invalid directive falls back to `info`'),
  json: bool(false, 'JSON log lines when true'),
});

const session = section('browser session', {
  cookie_name: str('svc_session', 'name of the session cookie'),
  absolute_ttl_hours: count(24, 'session lifetime from sign-in; also the cookie Max-Age'),
  idle_ttl_minutes: count(60, 'session idle lifetime'),
  secure: bool(false, 'Secure flag on session and OIDC cookies'),
});

const csrf = section('CSRF protection', {
  cookie_name: str('svc_csrf', 'name of the CSRF cookie'),
  header_name: str('X-Svc-CSRF', 'header carrying the CSRF cookie value on state-changing requests'),
});

const rate_limit = section('rate limits of local sign-in and the token endpoint (in memory, per replica; seconds)', {
  login_max_attempts: count(5, 'local sign-in attempts per window per address and per email, successes included'),
  login_window_secs: count(300, 'local sign-in window'),
  login_lockout_secs: count(300, 'local sign-in block time (HTTP 429)'),
  token_max_attempts: count(
    60,
    'requests to `POST /oauth/token` (client credentials) and to token exchange per window, keyed on address and client id; requests repeating an already verified secret are not counted',
  ),
  token_window_secs: count(60, 'token endpoint window'),
  token_lockout_secs: count(60, 'token endpoint block time (HTTP 429)'),
});

const oidc = section('single sign-on through an OpenID Connect provider', {
  enabled: bool(false, 'when true, `security.secret_key`, `oidc.issuer_url` and `oidc.client_id` are required'),
  issuer_url: str('', 'provider issuer; discovery is read from it', 'with oidc.enabled'),
  client_id: str('', 'client id at the provider', 'with oidc.enabled'),
  client_secret: str('', 'client secret at the provider'),
  redirect_url: str(
    'http://localhost:8080/api/auth/oidc/callback',
    'callback URL ending in `/api/auth/oidc/callback`; must be registered at the provider, on the browser\'s origin',
  ),
  scopes: strList(['openid', 'email', 'profile'], 'scopes requested at sign-in'),
  groups_claim: str('groups', 'claim listing groups'),
  post_login_redirect: str('/', 'where the browser goes after sign-in'),
  catalog_audience: str('svc-catalog', '`aud` the embedded catalog requires in an engine JWT'),
});

const idp = section('the service\'s own machine identity provider', {
  issuer: optStr(
    '`iss` of all minted tokens and of discovery; unset falls back to `catalog.public_url`; trailing slash trimmed; must be resolvable from outside the cluster; changing it strands already provisioned engines that compare the old issuer exactly',
  ),
});

const security = section('cookie encryption', {
  secret_key: str('', 'base64, at least 64 bytes; encrypts the OIDC state cookie', 'with oidc.enabled'),
});

const secrets = section('sealing of stored credentials', {
  master_key: str('', 'base64, at least 32 bytes; AES-256-GCM key for stored credentials; empty disables sealing'),
});

const catalog = section('embedded table catalog', {
  enabled: bool(false, 'run the catalog in the server process; needs warehouse, auth_token and the storage credentials'),
  warehouse: str('s3://warehouse', 'warehouse location', 'with catalog.enabled'),
  auth_token: str('', 'static admin token', 'with catalog.enabled'),
  public_url: str(
    'http://localhost:8080',
    'base origin without `/catalog`, advertised to clients; fallback for `idp.issuer`',
  ),
  system_user: str(
    'svc-system',
    'stable in-process principal; changing it creates a different system administrator',
  ),
});

const storage = section('object store (S3 compatible)', {
  endpoint: str('http://127.0.0.1:9000', 'object-store endpoint URL; empty for a hosted store'),
  region: str('us-east-1', 'region'),
  bucket: str('warehouse', 'bucket; must already exist', 'always'),
  access_key: str('', 'access key', 'always'),
  secret_key: str('', 'secret key', 'always'),
  path_style: bool(true, 'path-style addressing'),
});

const policy_service = section('policy service polled by engine plugins', {
  enabled: bool(false, 'serve the policy service polled by engine plugins and turn on policy administration'),
  auth_token: str('', 'token the plugins present; when set, requests without it get HTTP 401'),
});

const engine = section('query execution', {
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

const engines = z.object({
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

const audit = section('audit log', {
  enabled: bool(true, 'record audit events'),
  retention_days: z.number().int().default(90)
    .meta(meta('days audit events are kept; pruned hourly; 0 or negative keeps them for ever (the server logs that it declined to schedule pruning)')),
  channel_capacity: atLeast(1, 8192, 'in-memory queue of authorization events; when full, new events are dropped (best effort) and counted'),
  batch_size: atLeast(1, 256, 'most events written per INSERT'),
  flush_interval_ms: count(1000, 'longest time an event waits in the buffer'),
});

const automation = section('alerts and reports', {
  enabled: bool(true, 'run the schedule ticker'),
  tick_interval_secs: count(30, 'schedule tick'),
  webhook_allow_hosts: strList([], 'hosts a webhook may reach though they resolve to private address space'),
  renderer_url: str('http://renderer:8080', 'screenshot renderer base URL'),
  public_url: str('http://svc:8080', 'base URL the renderer uses to reach the server'),
  browser_url: optStr('base URL in notification links; unset falls back to `automation.public_url`'),
});

const data_api = section('Data API', {
  access_log_retention_days: count(90, 'days access-log entries are kept; 0 means no pruning'),
  public_url: optStr(
    'stamped into the generated OpenAPI document and the token endpoint given to new clients; unset falls back to the idp issuer, then `catalog.public_url`',
  ),
  replicas: count(1, 'number of Data API replicas; above 1 requires `data_api.shared_store_url`'),
  shared_store_url: optStr(
    'key-value store URL for rate-limit buckets and response cache across replicas; unset means process-local',
    'with data_api.replicas > 1',
  ),
});

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

const workflow = section('workflow engine', {
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

const jdbcDriver = z
  .object({
    driver_url: optStr('repoints the driver archive to an internal mirror or a `file:///` path'),
    driver_class: optStr(
      'driver class for that dialect; a pinned driver is compiled in for each of six dialects and this section only repoints it',
    ),
  })
  .meta(meta('driver of one dialect'));

const olap = section('repointing of database-driver artifacts for an analytic engine', {
  jdbc_drivers: z
    // dialect names are lower-cased, so `[olap.jdbc_drivers.Postgres]` and
    // SVC_OLAP__JDBC_DRIVERS__POSTGRES__* address the same entry
    .record(z.string().transform((k) => k.toLowerCase()), jdbcDriver)
    .default(() => ({}))
    .meta(meta('drivers by dialect name (lower-cased)')),
});

const appsPod = z
  .object({
    launcher: str(
      'none',
      '`none`, `subprocess` (local development) or `cluster` (one hardened pod per author per workspace); anything but none needs `apps.origin` and `apps.pod.callback_url` (startup check)',
    ),
    ready_timeout_secs: count(60, 'wait for a cold pod'),
    idle_secs: atLeast(60, 1800, 'edit pod idle stop; at least 60'),
    callback_url: str('', 'base URL pods call back to', 'when apps.pod.launcher is not none'),
    namespace: str('svc-apps', 'namespace of app pods'),
    image: str('svc-apps:dev', 'image of app pods'),
    image_pull_policy: oneOf(['Always', 'IfNotPresent', 'Never'], 'IfNotPresent', 'image pull policy of app pods'),
    cpu_request: str('250m', 'CPU request of an app pod'),
    mem_request: str('512Mi', 'memory request of an app pod'),
    cpu_limit: str('1000m', 'CPU limit of an app pod'),
    mem_limit: str('2Gi', 'memory limit of an app pod'),
    pull_secret: optStr('image pull secret of app pods'),
    command: strList([], 'subprocess launcher: entrypoint command', 'when apps.pod.launcher is subprocess'),
    work_dir: str('/tmp/svc-apps', 'subprocess launcher: parent of each pod\'s working directory'),
    config_dir: str('', 'subprocess launcher: locked configuration directory'),
    venv_shim_dir: str('', 'subprocess launcher: shim directory for run pods'),
    run_idle_secs: count(300, 'run pod idle stop'),
    run_session_cap: atLeast(1, 8, 'open sessions per run pod before 503; at least 1'),
    run_kernel_mode: oneOf(
      ['thread', 'forced_ipc'],
      'thread',
      '`thread` or `forced_ipc` (the latter is not a supported production path)',
    ),
  })
  .prefault({})
  .meta(meta('pods running data apps'));

const appsStorage = z
  .strictObject({
    prefix: keyPrefix('apps/', 'key prefix for drafts and versions; ends with `/`, does not start with `/`'),
  })
  .prefault({})
  .meta(meta('data-app content in the object store'));

const apps = z.object({
  max_rows: count(10000, 'row cap per gateway query'),
  timeout_secs: count(60, 'per-query engine timeout'),
  session_idle_secs: count(1800, 'token idle lifetime; must not exceed `apps.session_absolute_secs`'),
  session_absolute_secs: count(28800, 'token lifetime from minting'),
  rate_max: count(20, 'gateway calls per token per window'),
  rate_window_secs: count(2, 'rate window length'),
  origin: str(
    '',
    'origin (scheme://host[:port]) serving the notebook apps; a sibling subdomain, never another port; empty disables the iframe',
  ),
  service_origin: str(
    '',
    'the service\'s own browser-facing origin, the only origin allowed to frame the apps origin; must differ from `apps.origin`',
    'when apps.origin is set',
  ),
  ticket_ttl_secs: count(30, 'ticket lifetime'),
  cookie_ttl_secs: count(28800, 'apps-origin cookie lifetime'),
  listen: strRule(
    '0.0.0.0:8081',
    'address (host:port) of the apps listener, separate from the API',
    (v) => {
      const m = /^(.*):([0-9]+)$/.exec(v);
      return m !== null && Number(m[2]) >= 1 && Number(m[2]) <= 65535;
    },
    'must be host:port with a port between 1 and 65535',
  ),
  pod: appsPod,
  storage: appsStorage,
}).superRefine((v, ctx) => {
  if (
    typeof v.session_idle_secs === 'number' &&
    typeof v.session_absolute_secs === 'number' &&
    v.session_idle_secs > v.session_absolute_secs
  ) {
    ctx.addIssue({
      code: 'custom',
      path: ['session_idle_secs'],
      message: `must not exceed apps.session_absolute_secs (${v.session_absolute_secs})`,
    });
  }
}).prefault({}).meta(meta('data-apps gateway'));

const redis = section('Redis connection of the job queues (BullMQ)', {
  url: str('redis://127.0.0.1:6379', 'Redis connection URL'),
});

/** Every configuration key with its default and value rules. */
export const configSchema = z.object({
  server,
  database,
  log,
  session,
  csrf,
  rate_limit,
  oidc,
  idp,
  security,
  secrets,
  catalog,
  storage,
  policy_service,
  engine,
  engines,
  audit,
  automation,
  data_api,
  workflow,
  olap,
  apps,
  redis,
});

export type Config = z.output<typeof configSchema>;

/** All defaults: the schema parsed from an empty document. */
export function defaultConfig(): Config {
  return configSchema.parse({});
}

/** The issuer of minted tokens: `idp.issuer` (empty counts as unset), else `catalog.public_url`,
 * trailing slashes trimmed. */
export function idpIssuer(cfg: Config): string {
  const issuer = cfg.idp.issuer !== undefined && cfg.idp.issuer !== '' ? cfg.idp.issuer : cfg.catalog.public_url;
  return issuer.replace(/\/+$/, '');
}

// ---------- schema introspection (used by env.ts and docs.ts) ----------

export type BaseKind =
  | 'object'
  | 'record'
  | 'array'
  | 'string'
  | 'number'
  | 'boolean'
  | 'enum'
  | 'unknown'
  | 'other';

export interface Unwrapped {
  /** The schema under default/prefault/optional wrappers. */
  base: z.ZodType;
  kind: BaseKind;
  optional: boolean;
  meta: Partial<KeyMeta>;
}

interface Def {
  type: string;
  innerType?: z.ZodType;
  in?: z.ZodType;
}

const defOf = (s: z.ZodType): Def => (s as unknown as { _zod: { def: Def } })._zod.def;

/** Strip wrappers, collecting metadata from every layer (outer layers win). */
export function unwrap(schema: z.ZodType): Unwrapped {
  let s = schema;
  let optional = false;
  const layers: Partial<KeyMeta>[] = [];
  for (;;) {
    const m = s.meta() as Partial<KeyMeta> | undefined;
    if (m) layers.push(m);
    const d = defOf(s);
    if (d.type === 'optional') optional = true;
    if (
      (d.type === 'default' || d.type === 'prefault' || d.type === 'optional' ||
        d.type === 'nullable' || d.type === 'readonly' || d.type === 'catch') &&
      d.innerType
    ) {
      s = d.innerType;
      continue;
    }
    if (d.type === 'pipe' && d.in) {
      s = d.in;
      continue;
    }
    break;
  }
  const merged: Partial<KeyMeta> = {};
  for (const m of layers.reverse()) Object.assign(merged, m);
  const t = defOf(s).type;
  const kind: BaseKind = (
    ['object', 'record', 'array', 'string', 'number', 'boolean', 'enum', 'unknown'] as const
  ).includes(t as never)
    ? (t as BaseKind)
    : 'other';
  return { base: s, kind, optional, meta: merged };
}

/** Fields of an object schema (already unwrapped). */
export function shapeOf(base: z.ZodType): Record<string, z.ZodType> {
  return (base as unknown as { shape: Record<string, z.ZodType> }).shape;
}

/** True when an object schema rejects unknown keys. */
export function isStrict(base: z.ZodType): boolean {
  const d = defOf(base) as Def & { catchall?: z.ZodType };
  return d.type === 'object' && d.catchall !== undefined && defOf(d.catchall).type === 'never';
}

/** Value schema of a record schema. */
export function recordValue(base: z.ZodType): z.ZodType {
  return (defOf(base) as Def & { valueType: z.ZodType }).valueType;
}

/** True when a number schema only accepts integers. */
export function isInt(base: z.ZodType): boolean {
  return (base as unknown as { isInt?: boolean }).isInt === true;
}

export interface Leaf {
  /** Path of the key; a record level appears as `<name>` (e.g. `<dialect>`). */
  path: string[];
  schema: z.ZodType;
  info: Unwrapped;
}

/** Every key (scalar, list or free-form table) of the schema, in schema order. */
export function listLeaves(schema: z.ZodType = configSchema): Leaf[] {
  const out: Leaf[] = [];
  const walk = (s: z.ZodType, path: string[]): void => {
    const info = unwrap(s);
    if (info.kind === 'object') {
      for (const [k, v] of Object.entries(shapeOf(info.base))) walk(v, [...path, k]);
      return;
    }
    if (info.kind === 'record') {
      const value = unwrap(recordValue(info.base));
      if (value.kind === 'object') {
        walk(recordValue(info.base), [...path, recordPlaceholder(path)]);
        return;
      }
    }
    out.push({ path, schema: s, info });
  };
  walk(schema, []);
  return out;
}

/** Name shown for the free key of a record (`olap.jdbc_drivers.<dialect>`). */
export function recordPlaceholder(path: string[]): string {
  return path[path.length - 1] === 'jdbc_drivers' ? '<dialect>' : '<name>';
}
