// Which provisioner runs engines (SPEC 8 engines.provisioner). Pure: the environment and the
// file check are passed in, so the choice is unit-tested without a cluster. The embedded
// engine (src/queries) is offered exactly when this resolves to `none`.
import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';

export type Provisioner = 'cluster' | 'local_container' | 'none';

export interface ProvisionerConfig {
  engines: { provisioner: 'auto' | 'cluster' | 'local_container' | 'none' };
}

export type ProvisionerEnv = Readonly<Record<string, string | undefined>>;

export interface ProvisionerChoice {
  provisioner: Provisioner;
  /** why: shown in the `disabled` refusal and in the startup log */
  reason: string;
}

/**
 * The cluster configuration `auto` looks for, in the order @kubernetes/client-node's
 * loadFromDefault reads it: in-cluster (KUBERNETES_SERVICE_HOST), then KUBECONFIG's files,
 * then ~/.kube/config. Returns what was found, or null.
 */
export function findClusterConfig(env: ProvisionerEnv, exists: (path: string) => boolean): string | null {
  if (env.KUBERNETES_SERVICE_HOST) return 'KUBERNETES_SERVICE_HOST';
  const list = (env.KUBECONFIG ?? '').split(delimiter).filter((p) => p !== '');
  for (const p of list) if (exists(p)) return `KUBECONFIG ${p}`;
  const home = env.HOME ?? env.USERPROFILE;
  if (home) {
    const p = join(home, '.kube', 'config');
    if (exists(p)) return p;
  }
  return null;
}

/** The provisioner and why. `auto` never picks local_container (a development choice). */
export function chooseProvisioner(
  config: ProvisionerConfig,
  env: ProvisionerEnv,
  exists: (path: string) => boolean = existsSync,
): ProvisionerChoice {
  const p = config.engines.provisioner;
  if (p !== 'auto') return { provisioner: p, reason: `engines.provisioner is ${p}` };
  const found = findClusterConfig(env, exists);
  if (found) return { provisioner: 'cluster', reason: `engines.provisioner is auto and a cluster configuration was found (${found})` };
  return {
    provisioner: 'none',
    reason: 'engines.provisioner is auto and no cluster was found (KUBERNETES_SERVICE_HOST unset, no kube config)',
  };
}

/** `resolveProvisioner(config, env)`: the provisioner alone. */
export function resolveProvisioner(
  config: ProvisionerConfig,
  env: ProvisionerEnv,
  exists: (path: string) => boolean = existsSync,
): Provisioner {
  return chooseProvisioner(config, env, exists).provisioner;
}
