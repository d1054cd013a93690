// The background loops `svc serve` starts, each only when the configuration enables it; each
// registers its own teardown on services (run by services.close()).
import type { Services } from '../services.js';
import { startMaintenance } from './maintenance.js';
import { startWorkflowWorker } from './workflow-worker.js';
import { startTriggerLoop } from './trigger-loop.js';
import { startQueryWorker } from '../queries/worker.js';
import { startEngineWorker } from './engine-worker.js';
import { provisionerOf } from '../engines/engines.js';
import { createProvisioner } from '../engines/provisioner.js';
import { engineTlsInsecure, TLS_INSECURE_WARNING } from '../engines/tls.js';
import { startAutomationWorker } from './automation-worker.js';
import { startCatalogPurgeWorker } from '../catalog/purge.js';
import { startAppPodWorker } from './app-pod-worker.js';

/**
 * What must run before the first request: the audit hand-over and the invalidation subscriber
 * (a cache filled by a request before it listens could miss an invalidation); and the start's
 * warnings.
 */
export async function startRequestLoops(services: Services): Promise<void> {
  if (engineTlsInsecure(process.env)) services.logging.module('svc::jobs').warn(TLS_INSECURE_WARNING);
  services.audit.start();
  const stopListening = await services.invalidator.listen();
  services.onClose(stopListening);
}

/**
 * The workers and tickers, which `svc serve` starts right after it listens (issue 27 point 8: a
 * replica takes requests sooner): work queued meanwhile waits in its queue, as for any worker,
 * and an execution created in that moment is started by a start job instead of in its create.
 */
export async function startLoops(services: Services): Promise<void> {
  const log = services.logging.module('svc::jobs');
  const maintenance = await startMaintenance(services);
  services.onClose(() => maintenance.close());
  await startQueryWorker(services);
  const wf = services.config.workflow;
  if (wf.worker_enabled) {
    const worker = await startWorkflowWorker(services);
    services.onClose(() => worker.close());
  } else {
    log.info('workflow worker off (workflow.worker_enabled = false): executions are recorded and wait');
  }
  const engines = provisionerOf(services);
  log.info({ provisioner: engines.provisioner, reason: engines.reason }, 'engine provisioner');
  if (engines.provisioner !== 'none') {
    const p = await createProvisioner(services.config, engines.provisioner, { log: services.logging.module('svc::engines') });
    const worker = await startEngineWorker(services, p);
    services.onClose(() => worker.close());
  }
  if (wf.scheduler_enabled) {
    if (!wf.worker_enabled) log.warn('workflow.scheduler_enabled needs the worker: triggers fire executions that wait for a worker');
    const triggers = await startTriggerLoop(services);
    services.onClose(() => triggers.close());
  }
  await startAutomationWorker(services);
  if (services.config.catalog.enabled) startCatalogPurgeWorker(services);
  if (services.config.apps.pod.launcher !== 'none') {
    const pods = await startAppPodWorker(services);
    if (pods) services.onClose(() => pods.close());
  }
  reassertSchedulers(services);
}

/**
 * Periodic work lives in Redis as job schedulers: Redis restarted empty loses them, and with them
 * the sweeps that recover queued and running work. Every reaper interval, and at once whenever
 * the connection comes back, this process upserts the schedulers it declared again (idempotent).
 */
function reassertSchedulers(services: Services): void {
  const log = services.logging.module('svc::jobs');
  const everyMs = Math.max(1, services.config.workflow.reaper_interval_secs) * 1000;
  const reassert = (why: string) => {
    services.queues.reassert().then((n) => log.debug({ schedulers: n, why }, 'job schedulers asserted'),
      (err: Error) => log.warn({ err: err.message }, 'asserting the job schedulers failed; retried on the next interval'));
  };
  const timer = setInterval(() => reassert('interval'), everyMs);
  timer.unref();
  // 'ready' after a reconnect: the Redis that answers may be a new, empty one
  const onReady = () => reassert('redis reconnected');
  const redis = services.redis();
  redis.on('ready', onReady);
  services.onClose(async () => { clearInterval(timer); redis.off('ready', onReady); });
}
