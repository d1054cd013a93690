// The `app-pods` worker, started by `svc serve` when apps.pod.launcher is not none: `launch` jobs
// start a pod and wait for it; the `stop-idle` scheduler stops pods unused past their idle time;
// `stop-app` jobs stop the run pods of a deleted app (docs/apps.md "Pods").
import type { Services } from '../services.js';
import { QUEUES } from '../queue/queues.js';
import { startWorker } from '../queue/worker.js';
import type { PodLauncher } from '../apps/pods.js';
import { FORCED_IPC_WARNING, appSource, createPodLauncher, podManager } from '../apps/pod-runtime.js';

/** How often idle pods are looked for: a pod lives at most this much past its idle time. */
export const STOP_IDLE_EVERY_MS = 30_000;

export interface AppPodWorker { close(): Promise<void> }

/** `launcher` replaces the configured one (a test's launcher on an in-test API server). */
export async function startAppPodWorker(services: Services, given?: PodLauncher): Promise<AppPodWorker | null> {
  const log = services.logging.module('svc::jobs::app-pods');
  const launcher = given ?? createPodLauncher(services.config);
  if (!launcher) return null;
  // Passed to every pod as SVC_APP_KERNEL_MODE; said once, where the pods are launched.
  if (services.config.apps.pod.run_kernel_mode === 'forced_ipc') log.warn(FORCED_IPC_WARNING);
  const manager = podManager(services);
  const source = appSource(services);
  const worker = startWorker(services, QUEUES.appPods, async (job) => {
    if (job.name === 'launch' && job.data.key && job.data.id) return manager.launch(launcher, job.data.key, job.data.id, source);
    if (job.name === 'stop-idle') return manager.stopIdle(launcher);
    if (job.name === 'stop-app' && job.data.appId) return manager.stopApp(launcher, job.data.appId);
    throw new Error(`unknown app-pods job: ${job.name}`);
  }, {
    log, concurrency: 4,
    // A launch holds its job while the pod starts: the lease outlasts the ready wait.
    lockDuration: (services.config.apps.pod.ready_timeout_secs + 60) * 1000,
    describe: (job) => ({ job: job.id, pod: job.data.key }), failedMessage: 'app pod job failed',
  });
  await services.queues.schedule(QUEUES.appPods, 'stop-idle', STOP_IDLE_EVERY_MS, { name: 'stop-idle', data: {}, opts: QUEUES.appPods.scheduledJobOptions });
  log.info({ launcher: launcher.kind }, 'app pod worker started');
  return {
    async close() {
      // Pods first: a launch in progress then sees its process gone and ends at once, so the
      // worker's close (which waits for running jobs) is not held for ready_timeout_secs.
      await manager.closeLauncher(launcher);
      await worker.close();
    },
  };
}
