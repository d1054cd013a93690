// Startup checks (SPEC part 7): run before `svc serve` listens and in every command that
// touches the database. The first failure is thrown as a one-line ConfigError.
import { ConfigError, type Config } from './schema.js';
import { layoutProblem, storageLayout } from '../storage/layout.js';

/** Decode strict base64: standard alphabet with correct padding, or the url-safe alphabet
 * padded correctly or unpadded. Non-canonical encodings are refused. Null when invalid. */
export function decodeBase64Strict(s: string): Buffer | null {
  if (/^[A-Za-z0-9+/]*={0,2}$/.test(s) && s.length % 4 === 0) {
    const b = Buffer.from(s, 'base64');
    if (b.toString('base64') === s) return b;
  }
  if (/^[A-Za-z0-9_-]*={0,2}$/.test(s)) {
    const body = s.replace(/=+$/, '');
    if (body.length !== s.length && s.length % 4 !== 0) return null;
    if (body.length % 4 === 1) return null;
    const b = Buffer.from(body, 'base64url');
    if (b.toString('base64url') === body) return b;
  }
  return null;
}

function base64AtLeast(s: string, bytes: number): boolean {
  const b = decodeBase64Strict(s);
  return b !== null && b.length >= bytes;
}

const set = (v: string | undefined): v is string => v !== undefined && v !== '';

/** Why `v` is not an origin `scheme://host[:port]` (http or https, no path, query,
 * fragment or user info); undefined when it is one. */
function originProblem(key: string, v: string): string | undefined {
  const m = /^(https?):\/\/([^/?#@\s]+)$/i.exec(v);
  if (m) {
    try {
      const u = new URL(v);
      if (u.hostname !== '') return undefined;
    } catch {
      /* fall through */
    }
  }
  return `${key} ${JSON.stringify(v)} is not scheme://host[:port] (http or https, no path)`;
}

function appsOriginProblem(cfg: Config): string | undefined {
  const a = cfg.apps;
  if (!set(a.service_origin)) return 'apps.service_origin is empty';
  const p = originProblem('apps.origin', a.origin) ?? originProblem('apps.service_origin', a.service_origin);
  if (p) return p;
  if (new URL(a.origin).origin === new URL(a.service_origin).origin) {
    return `apps.origin and apps.service_origin are both ${new URL(a.origin).origin}`;
  }
  for (const k of ['ticket_ttl_secs', 'cookie_ttl_secs', 'session_idle_secs', 'session_absolute_secs'] as const) {
    if (a[k] < 1) return `apps.${k} is ${a[k]}`;
  }
  return undefined;
}

function launcherProblem(cfg: Config): string | undefined {
  const pod = cfg.apps.pod;
  const l = pod.launcher;
  if (l !== 'none' && l !== 'subprocess' && l !== 'cluster') return `apps.pod.launcher is ${JSON.stringify(l)}`;
  if (l === 'none') return undefined;
  if (l === 'subprocess' && (pod.command.length === 0 || pod.command[0] === '')) {
    return 'subprocess needs apps.pod.command';
  }
  if (!set(cfg.apps.origin)) return `${l} needs apps.origin`;
  if (!set(pod.callback_url)) return `${l} needs apps.pod.callback_url`;
  return undefined;
}

/** The fixed messages (or message beginnings) of SPEC part 7. */
export const CHECK_MESSAGES = {
  oidcSecretKey: 'oidc.enabled requires security.secret_key (base64, >=64 bytes)',
  oidcClient: 'oidc.enabled requires issuer_url and client_id',
  catalogToken: 'catalog.enabled requires warehouse and auth_token',
  catalogStorage: 'catalog.enabled requires storage access_key/secret_key/bucket',
  masterKey: 'secrets.master_key must be base64 of >=32 bytes',
  storage:
    'the apps API requires [storage] bucket, access_key, secret_key (it stores content in the bucket); set them in svc.toml or SVC_STORAGE__*',
  engineLimits: 'engine.max_rows and engine.query_timeout_secs must be >= 1',
  enginePreview: 'engine.preview_rows must be <= engine.max_rows',
  killPoll: (v: number | string) => `workflow.kill_poll_ms is ${v}, below the minimum 100`,
  containerRunner:
    'workflow.container_runner other than none requires [storage] bucket, access_key, secret_key and [workflow.plugin_host] image',
  appsOrigin: (problem: string) =>
    `apps.origin must differ from apps.service_origin, both must be scheme://host[:port] and the apps TTLs >= 1: ${problem}`,
  launcher: (problem: string) =>
    `apps.pod.launcher must be none, subprocess or cluster with the keys each needs: ${problem}`,
  dataApiReplicas: 'data_api.replicas above 1 requires data_api.shared_store_url',
  storageLayout: (problem: string) =>
    `engine.results_prefix, apps.storage.prefix and workflow.storage.prefix must not overlap, nor hold catalog.warehouse: ${problem}`,
} as const;

/** Rule and message of every startup check, in the order they run (for the docs). */
export const STARTUP_CHECKS: ReadonlyArray<readonly [rule: string, message: string]> = [
  ['`oidc.enabled` needs `security.secret_key`, base64 of at least 64 bytes', CHECK_MESSAGES.oidcSecretKey],
  ['`oidc.enabled` needs `oidc.issuer_url` and `oidc.client_id`', CHECK_MESSAGES.oidcClient],
  ['`catalog.enabled` needs `catalog.warehouse` and `catalog.auth_token`', CHECK_MESSAGES.catalogToken],
  ['`catalog.enabled` needs the storage credentials', CHECK_MESSAGES.catalogStorage],
  ['`secrets.master_key`, when set, decodes to at least 32 bytes', CHECK_MESSAGES.masterKey],
  ['always (even for `svc migrate` and `svc init`): `storage.bucket`, `access_key`, `secret_key` set', CHECK_MESSAGES.storage],
  ['`engine.max_rows` and `engine.query_timeout_secs` at least 1', CHECK_MESSAGES.engineLimits],
  ['`engine.preview_rows` at most `engine.max_rows`', CHECK_MESSAGES.enginePreview],
  ['`workflow.kill_poll_ms` at least 100', CHECK_MESSAGES.killPoll('<value>')],
  ['`workflow.container_runner` other than `none` needs the storage credentials and `workflow.plugin_host.image`', CHECK_MESSAGES.containerRunner],
  ['`apps.origin` set: both origins are scheme://host[:port] (http or https), they differ, the apps TTLs (`ticket_ttl_secs`, `cookie_ttl_secs`, `session_idle_secs`, `session_absolute_secs`) at least 1', CHECK_MESSAGES.appsOrigin('<problem>')],
  ['`apps.pod.launcher` is `none`, `subprocess` (needs `apps.pod.command`, `apps.origin`, `apps.pod.callback_url`) or `cluster` (needs `apps.origin`, `apps.pod.callback_url`)', CHECK_MESSAGES.launcher('<problem>')],
  ['`data_api.replicas` above 1 needs `data_api.shared_store_url`', CHECK_MESSAGES.dataApiReplicas],
  ['always: no key prefix of query results, apps or workflow files lies inside another, and `catalog.warehouse` lies inside none of them (docs/architecture.md, the storage rule)', CHECK_MESSAGES.storageLayout('<problem>')],
];

/** Throws ConfigError with the SPEC part 7 message of the first failing rule. */
export function startupChecks(cfg: Config): void {
  const fail = (m: string): never => {
    throw new ConfigError(m);
  };
  const storageCreds = set(cfg.storage.bucket) && set(cfg.storage.access_key) && set(cfg.storage.secret_key);

  if (cfg.oidc.enabled && !base64AtLeast(cfg.security.secret_key, 64)) {
    fail(CHECK_MESSAGES.oidcSecretKey);
  }
  if (cfg.oidc.enabled && (!set(cfg.oidc.issuer_url) || !set(cfg.oidc.client_id))) {
    fail(CHECK_MESSAGES.oidcClient);
  }
  if (cfg.catalog.enabled && (!set(cfg.catalog.warehouse) || !set(cfg.catalog.auth_token))) {
    fail(CHECK_MESSAGES.catalogToken);
  }
  if (cfg.catalog.enabled && !storageCreds) {
    fail(CHECK_MESSAGES.catalogStorage);
  }
  if (set(cfg.secrets.master_key) && !base64AtLeast(cfg.secrets.master_key, 32)) {
    fail(CHECK_MESSAGES.masterKey);
  }
  if (!storageCreds) {
    fail(CHECK_MESSAGES.storage);
  }
  if (cfg.engine.max_rows < 1 || cfg.engine.query_timeout_secs < 1) {
    fail(CHECK_MESSAGES.engineLimits);
  }
  if (cfg.engine.preview_rows > cfg.engine.max_rows) {
    fail(CHECK_MESSAGES.enginePreview);
  }
  if (cfg.workflow.kill_poll_ms < 100) {
    fail(CHECK_MESSAGES.killPoll(cfg.workflow.kill_poll_ms));
  }
  if (cfg.workflow.container_runner !== 'none' && (!storageCreds || !set(cfg.workflow.plugin_host.image))) {
    fail(CHECK_MESSAGES.containerRunner);
  }
  if (set(cfg.apps.origin)) {
    const p = appsOriginProblem(cfg);
    if (p) fail(CHECK_MESSAGES.appsOrigin(p));
  }
  const lp = launcherProblem(cfg);
  if (lp) fail(CHECK_MESSAGES.launcher(lp));
  if (cfg.data_api.replicas > 1 && !set(cfg.data_api.shared_store_url)) {
    fail(CHECK_MESSAGES.dataApiReplicas);
  }
  const layout = layoutProblem(storageLayout(cfg));
  if (layout) fail(CHECK_MESSAGES.storageLayout(layout));
}
