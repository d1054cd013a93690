// Builds the app pod parts from the configuration (apps.pod.*): the launcher, the manager on the
// `app-pods` queue, and where a launch reads an app's source. Shared by the apps listener (which
// opens pods) and the pod worker (which launches and stops them).
import type { Config } from '../config/index.js';
import type { Services } from '../services.js';
import { QUEUES, jobOptions } from '../queue/queues.js';
import { AppStore } from './apps.js';
import { PodStore } from './pod-store.js';
import { PodManager, type PodSettings, type SourceOf } from './pod-manager.js';
import { SubprocessLauncher } from './pod-subprocess.js';
import { ClusterLauncher, clusterPodOptions, type ClusterPodDeps } from './pod-cluster.js';
import type { PodLauncher } from './pods.js';

export const FORCED_IPC_WARNING = 'apps.pod.run_kernel_mode is forced_ipc: not a supported production path (use thread)';

export function podSettings(cfg: Config): PodSettings {
  const p = cfg.apps.pod;
  return {
    readyTimeoutSecs: p.ready_timeout_secs, idleSecs: p.idle_secs, runIdleSecs: p.run_idle_secs,
    runSessionCap: p.run_session_cap, sessionIdleSecs: cfg.apps.session_idle_secs,
  };
}

/** The configured launcher, or null for `none`. */
export function createPodLauncher(cfg: Config, deps: ClusterPodDeps = {}): PodLauncher | null {
  const p = cfg.apps.pod;
  if (p.launcher === 'none') return null;
  if (p.launcher === 'subprocess') {
    return new SubprocessLauncher({
      command: p.command, workDir: p.work_dir, configDir: p.config_dir, venvShimDir: p.venv_shim_dir,
      kernelMode: p.run_kernel_mode, callbackUrl: p.callback_url,
    });
  }
  return new ClusterLauncher(clusterPodOptions(cfg), deps);
}

/**
 * Where pods are recorded: under the BullMQ key prefix (`svc:apps:pod:...` in production), so two
 * deployments or two test apps sharing a Redis never walk each other's pods.
 */
export const podStore = (s: Services) => new PodStore(s.redis(), `${s.queues.prefix}:apps`);

export function podManager(s: Services): PodManager {
  return new PodManager({
    store: podStore(s), clock: s.clock, settings: podSettings(s.config), log: s.logging.module('svc::apps::pods'),
    enqueueLaunch: async (key, id) => {
      await s.queues.get(QUEUES.appPods).add('launch', { key, id }, jobOptions(QUEUES.appPods, { jobId: `launch-${id}` }));
    },
  });
}

/** Asks the pod worker to stop the run pods of a deleted app (nothing to do without a launcher). */
export async function queueAppStop(s: Services, appId: string): Promise<void> {
  if (s.config.apps.pod.launcher === 'none') return;
  await s.queues.get(QUEUES.appPods).add('stop-app', { appId }, jobOptions(QUEUES.appPods, { jobId: `stop-app-${appId}` }));
}

/** A run pod starts with its published version, an edit pod with the author's draft. */
export function appSource(s: Services): SourceOf {
  const apps = new AppStore({ db: s.db, storage: s.storage, clock: s.clock });
  return async (rec) => {
    const app = await apps.get(rec.workspaceId, rec.appId, false);
    const source = rec.mode === 'run' ? await apps.version(rec.workspaceId, rec.appId, rec.version!) : await apps.draft(rec.workspaceId, rec.appId);
    return { appName: app.name, source };
  };
}
