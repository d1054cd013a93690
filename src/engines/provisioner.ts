// The port both provisioners implement. Every operation is idempotent and keyed by the engine id,
// so a job handed back after a crash can run it again.
import type { Logger } from 'pino';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Config } from '../config/index.js';
import type { EngineKind, EngineResources } from '../db/engine-types.js';

export interface EngineSpec {
  id: string;
  workspace: string;
  name: string;
  kind: EngineKind;
  image: string;
  port: number;
  resources: EngineResources;
  /** rendered configuration: path (relative to configDir) -> content */
  files: Record<string, string>;
  configDir: string;
  labels: Record<string, string>;
  /** secret-bearing environment (the OAuth client secret): never logged or labelled */
  env: Record<string, string>;
  hash: string;
}

/** An object the provisioner found (reconcile: drift and orphans). */
export interface FoundEngine { engineId: string; workspace: string; name: string; hash: string; running: boolean; object: string }

export interface EngineProvisioner {
  readonly kind: 'cluster' | 'local_container';
  /** Creates (or replaces, when the configuration hash differs) and starts; returns the URL clients use. */
  up(spec: EngineSpec, signal?: AbortSignal): Promise<{ endpoint: string }>;
  /** Stops it, keeping what a start needs; a missing engine is stopped already. */
  stop(spec: EngineSpec): Promise<void>;
  /** Removes every object of the engine; a missing one is removed already. */
  remove(spec: EngineSpec): Promise<void>;
  /** Engine objects of this service (its project or namespace) only. */
  list(): Promise<FoundEngine[]>;
  close?(): Promise<void>;
}

export interface ProvisionerDeps { log?: Logger; kubeConfig?: KubeConfig }

/** The provisioner of a resolved choice; only its client library is loaded. */
export async function createProvisioner(config: Config, kind: 'cluster' | 'local_container', deps: ProvisionerDeps = {}): Promise<EngineProvisioner> {
  if (kind === 'local_container') {
    const { createLocalEngineProvisioner } = await import('./local-container.js');
    return createLocalEngineProvisioner(config.engines.local_container, deps);
  }
  const { createClusterEngineProvisioner } = await import('./cluster.js');
  return createClusterEngineProvisioner(config, deps);
}
