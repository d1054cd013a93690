// The data-apps gateway and its pods (SPEC 8 apps, apps.pod, apps.storage).
import { z } from 'zod';
import { meta, count, atLeast, str, optStr, strList, strRule, keyPrefix, oneOf } from '../builders.js';

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

export const apps = z.object({
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
