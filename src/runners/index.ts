// Runners: execute one task-run attempt in a container. `createContainerRunner` picks the one
// `workflow.container_runner` names and loads only its client library (dockerode or
// @kubernetes/client-node).
import type { Logger } from 'pino';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Config } from '../config/index.js';
import type { ContainerRunner } from './types.js';

export * from './types.js';
export type { LocalContainerRunner, LocalContainerRunnerOptions } from './local-container.js';
export type { ClusterRunner, ClusterRunnerOptions } from './cluster/index.js';

export interface RunnerDeps {
  log?: Logger;
  clock?: { now(): Date };
  /** cluster only; defaults to loadFromDefault() (in-cluster account or ~/.kube/config) */
  kubeConfig?: KubeConfig;
}

/**
 * The runner of `workflow.container_runner`, or null for `none`. `local_container` reaches the
 * engine at `engines.local_container.host` and stamps `engines.local_container.project` on its
 * containers; `cluster` reads `workflow.cluster`.
 */
export async function createContainerRunner(config: Config, deps: RunnerDeps = {}): Promise<ContainerRunner | null> {
  const kind = config.workflow.container_runner;
  if (kind === 'none') return null;
  if (kind === 'local_container') {
    const { createLocalContainerRunner } = await import('./local-container.js');
    const lc = config.engines.local_container;
    return createLocalContainerRunner({
      host: lc.host,
      project: lc.project || undefined,
      log: deps.log,
      clock: deps.clock,
    });
  }
  const { createClusterRunner } = await import('./cluster/index.js');
  const c = config.workflow.cluster;
  return createClusterRunner({
    kubeConfig: deps.kubeConfig,
    namespace: c.namespace,
    defaultResources: { request: c.default_resources.request, limit: c.default_resources.limit },
    maxResources: { request: c.max_resources.request, limit: c.max_resources.limit },
    runAsUser: c.run_as_user,
    imagePullSecrets: c.image_pull_secrets,
    helperImage: c.helper_image,
    log: deps.log,
    clock: deps.clock,
  });
}

/**
 * Cut-off for `removeKept`: containers and pods kept with taskRunner.delete false that ended
 * before it are removed. null when `workflow.kept_container_retention_days` is 0 (kept for ever).
 */
export function keptContainerCutoff(config: Config, now: Date): Date | null {
  const days = config.workflow.kept_container_retention_days;
  if (!days) return null;
  return new Date(now.getTime() - days * 86_400_000);
}
