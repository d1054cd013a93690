// `cluster` provisioner: per engine one Secret (the OAuth client secret), one ConfigMap (the
// rendered files), one Deployment (one replica; 0 when stopped) and one ClusterIP Service, in
// workflow.cluster.namespace, through @kubernetes/client-node. Pods get the hardening of task pods
// (workflow.cluster.run_as_user, non-root, no privilege escalation, every capability dropped,
// RuntimeDefault seccomp, no service-account token, no service links, the pull secrets).
// Objects carry the engine labels; lookups select on svc.component=engine and the engine id.
import { createHash } from 'node:crypto';
import {
  AppsV1Api, CoreV1Api, KubeConfig, PatchStrategy, setHeaderOptions,
  type V1ConfigMap, type V1Deployment, type V1Secret, type V1Service,
} from '@kubernetes/client-node';
import type { Config } from '../config/index.js';
import { apiCode, apiMessage } from '../runners/cluster/pod-api.js';
import type { EngineProvisioner, EngineSpec, FoundEngine, ProvisionerDeps } from './provisioner.js';

export interface ClusterEngineOptions { namespace: string; runAsUser: number; imagePullSecrets: string[] }

/** DNS-1123 name of an engine's objects: at most 63 characters, a hash of the id keeps it unique. */
export function objectName(spec: Pick<EngineSpec, 'workspace' | 'name' | 'id'>): string {
  const h = createHash('sha256').update(spec.id).digest('hex').slice(0, 8);
  const base = `svc-engine-${spec.workspace}-${spec.name}`.toLowerCase().replace(/[^a-z0-9-]+/g, '-').slice(0, 54).replace(/-+$/, '');
  return `${base}-${h}`;
}

/** ConfigMap keys cannot hold `/`: `catalog/iceberg.properties` is stored as `catalog__iceberg.properties`. */
const configKey = (path: string) => path.replace(/\//g, '__');

const SECURITY = { runAsNonRoot: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } };

export function engineObjects(o: ClusterEngineOptions, spec: EngineSpec): { secret: V1Secret; config: V1ConfigMap; deployment: V1Deployment; service: V1Service } {
  const name = objectName(spec);
  const metadata = { name, namespace: o.namespace, labels: spec.labels };
  const selector = { 'svc.component': 'engine', 'svc.engine-id': spec.id };
  return {
    secret: { apiVersion: 'v1', kind: 'Secret', metadata: { ...metadata, name: `${name}-client` }, type: 'Opaque', stringData: spec.env },
    config: {
      apiVersion: 'v1', kind: 'ConfigMap', metadata: { ...metadata, name: `${name}-config` },
      data: Object.fromEntries(Object.entries(spec.files).map(([p, v]) => [configKey(p), v])),
    },
    deployment: {
      apiVersion: 'apps/v1', kind: 'Deployment', metadata,
      spec: {
        replicas: 1,
        // one engine process at a time: a new configuration replaces the old pod, never beside it
        strategy: { type: 'Recreate' },
        selector: { matchLabels: selector },
        template: {
          metadata: { labels: spec.labels },
          spec: {
            automountServiceAccountToken: false,
            enableServiceLinks: false,
            securityContext: { runAsUser: o.runAsUser, runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
            imagePullSecrets: o.imagePullSecrets.map((n) => ({ name: n })),
            containers: [{
              name: 'engine',
              image: spec.image,
              ports: [{ name: 'http', containerPort: spec.port }],
              envFrom: [{ secretRef: { name: `${name}-client` } }],
              resources: { requests: { ...spec.resources }, limits: { ...spec.resources } },
              securityContext: { ...SECURITY, runAsUser: o.runAsUser },
              volumeMounts: [{ name: 'config', mountPath: spec.configDir, readOnly: true }],
              readinessProbe: { tcpSocket: { port: spec.port }, periodSeconds: 10 },
            }],
            volumes: [{
              name: 'config',
              configMap: { name: `${name}-config`, items: Object.keys(spec.files).sort().map((p) => ({ key: configKey(p), path: p })) },
            }],
          },
        },
      },
    },
    service: {
      apiVersion: 'v1', kind: 'Service', metadata,
      spec: { type: 'ClusterIP', selector, ports: [{ name: 'http', port: spec.port, targetPort: spec.port }] },
    },
  };
}

export function createClusterEngineProvisioner(config: Config, deps: ProvisionerDeps = {}): EngineProvisioner {
  const c = config.workflow.cluster;
  const o: ClusterEngineOptions = { namespace: c.namespace, runAsUser: c.run_as_user, imagePullSecrets: c.image_pull_secrets };
  const kc = deps.kubeConfig ?? (() => { const k = new KubeConfig(); k.loadFromDefault(); return k; })();
  const core = kc.makeApiClient(CoreV1Api);
  const apps = kc.makeApiClient(AppsV1Api);
  const log = deps.log;
  const ns = o.namespace;
  const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
  const ignore404 = (err: unknown) => { if (apiCode(err) !== 404) throw new Error(apiMessage(err)); };

  /** create, or replace what is there (409): the objects follow the spec exactly. */
  async function apply<T>(create: () => Promise<T>, replace: () => Promise<T>): Promise<void> {
    try { await create(); } catch (err) {
      if (apiCode(err) !== 409) throw new Error(apiMessage(err));
      try { await replace(); } catch (e) { throw new Error(apiMessage(e)); }
    }
  }

  return {
    kind: 'cluster',

    async up(spec) {
      const x = engineObjects(o, spec);
      const name = x.deployment.metadata!.name!;
      await apply(() => core.createNamespacedSecret({ namespace: ns, body: x.secret }), () => core.replaceNamespacedSecret({ name: `${name}-client`, namespace: ns, body: x.secret }));
      await apply(() => core.createNamespacedConfigMap({ namespace: ns, body: x.config }), () => core.replaceNamespacedConfigMap({ name: `${name}-config`, namespace: ns, body: x.config }));
      const current = await apps.readNamespacedDeployment({ name, namespace: ns }).catch((err: unknown) => { ignore404(err); return null; });
      if (!current) {
        await apps.createNamespacedDeployment({ namespace: ns, body: x.deployment }).catch((err: unknown) => { throw new Error(apiMessage(err)); });
      } else if (current.metadata?.labels?.['svc.config-hash'] !== spec.hash) {
        log?.info({ engine: spec.id, was: current.metadata?.labels?.['svc.config-hash'], now: spec.hash }, 'engine configuration changed: replacing its deployment');
        await apps.replaceNamespacedDeployment({ name, namespace: ns, body: { ...x.deployment, metadata: { ...x.deployment.metadata, resourceVersion: current.metadata?.resourceVersion } } })
          .catch((err: unknown) => { throw new Error(apiMessage(err)); });
      } else if (current.spec?.replicas !== 1) {
        await apps.patchNamespacedDeployment({ name, namespace: ns, body: { spec: { replicas: 1 } } }, merge).catch((err: unknown) => { throw new Error(apiMessage(err)); });
      }
      await apply(() => core.createNamespacedService({ namespace: ns, body: x.service }), async () => undefined);
      return { endpoint: `http://${name}.${ns}.svc:${spec.port}` };
    },

    async stop(spec) {
      await apps.patchNamespacedDeployment({ name: objectName(spec), namespace: ns, body: { spec: { replicas: 0 } } }, merge).catch(ignore404);
    },

    async remove(spec) {
      const name = objectName(spec);
      await apps.deleteNamespacedDeployment({ name, namespace: ns }).catch(ignore404);
      await core.deleteNamespacedService({ name, namespace: ns }).catch(ignore404);
      await core.deleteNamespacedConfigMap({ name: `${name}-config`, namespace: ns }).catch(ignore404);
      await core.deleteNamespacedSecret({ name: `${name}-client`, namespace: ns }).catch(ignore404);
    },

    async list(): Promise<FoundEngine[]> {
      const l = await apps.listNamespacedDeployment({ namespace: ns, labelSelector: 'svc.component=engine' });
      return l.items.map((d) => ({
        engineId: d.metadata?.labels?.['svc.engine-id'] ?? '', workspace: d.metadata?.labels?.['svc.workspace'] ?? '', name: d.metadata?.labels?.['svc.engine'] ?? '', hash: d.metadata?.labels?.['svc.config-hash'] ?? '',
        running: (d.spec?.replicas ?? 0) > 0, object: d.metadata?.name ?? '',
      }));
    },
  };
}
