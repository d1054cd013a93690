// The `cluster` pod launcher (apps.pod.launcher = cluster): one Kubernetes pod per app pod in
// apps.pod.namespace, with apps.pod.image, its pull policy, requests, limits and pull secret, and
// the hardening of task pods (src/runners/cluster/pod-spec.ts): the uid of
// workflow.cluster.run_as_user, non-root, read-only root file system, no privilege escalation,
// every capability dropped, RuntimeDefault seccomp, no service-account token, no service links.
// The notebook source travels in a Secret beside the pod (one key per app: `<name>.py`), mounted
// read-only at SOURCE_DIR; an edit pod's further apps are added to that Secret (the kubelet
// refreshes the mounted files within its sync period, about a minute).
import type { CoreV1Api, KubeConfig, V1Pod, V1Secret } from '@kubernetes/client-node';
import type { Config } from '../config/index.js';
import { apiCode, apiMessage } from '../runners/cluster/pod-api.js';
import type { PodHandle, PodLauncher, PodSpec } from './pods.js';

/** Where the pod finds its notebooks, and the writable directories of a read-only root. */
export const SOURCE_DIR = '/srv/app/src';
export const WORK_DIR = '/srv/app/work';
/** The port an app pod listens on (SVC_APP_PORT). */
export const APP_PORT = 8080;

export interface ClusterPodOptions {
  namespace: string;
  image: string;
  pullPolicy: string;
  requests: { cpu: string; memory: string };
  limits: { cpu: string; memory: string };
  pullSecret?: string;
  runAsUser: number;
  kernelMode: string;
  callbackUrl: string;
  port?: number;
}

export interface ClusterPodDeps { kubeConfig?: KubeConfig; pollMs?: number }

export function clusterPodOptions(cfg: Config): ClusterPodOptions {
  const p = cfg.apps.pod;
  return {
    namespace: p.namespace, image: p.image, pullPolicy: p.image_pull_policy,
    requests: { cpu: p.cpu_request, memory: p.mem_request }, limits: { cpu: p.cpu_limit, memory: p.mem_limit },
    pullSecret: p.pull_secret || undefined, runAsUser: cfg.workflow.cluster.run_as_user,
    kernelMode: p.run_kernel_mode, callbackUrl: p.callback_url,
  };
}

/** Pod and Secret names: the launch id (a UUID) keeps them unique and within 63 characters. */
export const podName = (spec: Pick<PodSpec, 'mode' | 'id'>) => `svc-app-${spec.mode}-${spec.id}`;

const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');

/** The pod and its source Secret (no I/O). */
export function appPodObjects(o: ClusterPodOptions, spec: PodSpec): { pod: V1Pod; secret: V1Secret } {
  const name = podName(spec);
  const port = o.port ?? APP_PORT;
  const labels = { 'svc.component': 'app-pod', 'svc.app-mode': spec.mode, 'svc.app-id': spec.appId, 'svc.workspace-id': spec.workspaceId, 'svc.launch': spec.id };
  const env: Record<string, string> = {
    SVC_APP_HOST: '0.0.0.0', SVC_APP_PORT: String(port), SVC_APP_MODE: spec.mode, SVC_APP_ID: spec.appId, SVC_APP_NAME: spec.appName,
    SVC_APP_VERSION: spec.version === null ? '' : String(spec.version), SVC_APP_WORKSPACE_ID: spec.workspaceId,
    SVC_APP_SOURCE: `${SOURCE_DIR}/${spec.appName}.py`, SVC_APP_SOURCE_DIR: SOURCE_DIR, SVC_APP_WORK_DIR: WORK_DIR,
    SVC_APP_KERNEL_MODE: o.kernelMode, SVC_APP_CALLBACK_URL: o.callbackUrl, HOME: WORK_DIR,
  };
  const pod: V1Pod = {
    apiVersion: 'v1', kind: 'Pod',
    metadata: { name, namespace: o.namespace, labels },
    spec: {
      restartPolicy: 'Never',
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      securityContext: { runAsUser: o.runAsUser, runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
      imagePullSecrets: o.pullSecret ? [{ name: o.pullSecret }] : [],
      containers: [{
        name: 'app',
        image: o.image,
        imagePullPolicy: o.pullPolicy,
        ports: [{ name: 'http', containerPort: port }],
        env: Object.entries(env).map(([k, value]) => ({ name: k, value })),
        resources: { requests: { ...o.requests }, limits: { ...o.limits } },
        securityContext: {
          runAsUser: o.runAsUser, runAsNonRoot: true, allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] },
        },
        volumeMounts: [
          { name: 'source', mountPath: SOURCE_DIR, readOnly: true },
          { name: 'work', mountPath: WORK_DIR },
          { name: 'tmp', mountPath: '/tmp' },
        ],
      }],
      volumes: [
        { name: 'source', secret: { secretName: `${name}-src`, defaultMode: 0o444 } },
        { name: 'work', emptyDir: {} },
        { name: 'tmp', emptyDir: {} },
      ],
    },
  };
  const secret: V1Secret = {
    apiVersion: 'v1', kind: 'Secret', type: 'Opaque',
    metadata: { name: `${name}-src`, namespace: o.namespace, labels },
    data: { [`${spec.appName}.py`]: b64(spec.source) },
  };
  return { pod, secret };
}

/** Why a pod can no longer become ready, from its status; null while it may. */
export function podFailure(pod: V1Pod): string | null {
  const phase = pod.status?.phase;
  if (phase === 'Failed' || phase === 'Succeeded') return `its pod ended (${[phase, pod.status?.reason].filter(Boolean).join(': ')})`;
  for (const st of pod.status?.containerStatuses ?? []) {
    const w = st.state?.waiting?.reason;
    if (w && /ErrImagePull|ImagePullBackOff|InvalidImageName|CreateContainerConfigError|CrashLoopBackOff/.test(w)) return `its pod cannot start (${w})`;
    if (st.state?.terminated) return `its container exited (${st.state.terminated.exitCode})`;
  }
  return null;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The Kubernetes client is large (800 modules): loaded on the launcher's first call, so a server
 * that never launches a cluster pod (and `svc openapi`) never pays for it. */
let k8s: Promise<typeof import('@kubernetes/client-node')> | undefined;
const loadK8s = () => (k8s ??= import('@kubernetes/client-node'));

export class ClusterLauncher implements PodLauncher {
  readonly kind = 'cluster' as const;
  private client?: Promise<CoreV1Api>;
  private readonly pollMs: number;

  constructor(private readonly o: ClusterPodOptions, private readonly deps: ClusterPodDeps = {}) {
    this.pollMs = deps.pollMs ?? 500;
  }

  private core(): Promise<CoreV1Api> {
    return (this.client ??= loadK8s().then(({ KubeConfig, CoreV1Api }) => {
      const kc = this.deps.kubeConfig ?? (() => { const k = new KubeConfig(); k.loadFromDefault(); return k; })();
      return kc.makeApiClient(CoreV1Api);
    }));
  }

  private get ns() { return this.o.namespace; }

  /** Creates the Secret and the pod, then waits (until `deadlineMs`) for the pod's IP. */
  async start(spec: PodSpec, deadlineMs = Date.now() + 60_000): Promise<PodHandle> {
    const { pod, secret } = appPodObjects(this.o, spec);
    const name = pod.metadata!.name!;
    const handle: PodHandle = { address: '', ref: { name } };
    const core = await this.core();
    await core.createNamespacedSecret({ namespace: this.ns, body: secret });
    try {
      await core.createNamespacedPod({ namespace: this.ns, body: pod });
      while (Date.now() < deadlineMs) {
        const now = await core.readNamespacedPod({ name, namespace: this.ns });
        const why = podFailure(now);
        if (why) throw new Error(why);
        if (now.status?.podIP) return { ...handle, address: `http://${now.status.podIP}:${this.o.port ?? APP_PORT}` };
        await sleep(this.pollMs);
      }
      throw new Error('its pod got no address in time');
    } catch (err) {
      await this.stop(handle);
      throw new Error(apiMessage(err));
    }
  }

  async failure(handle: PodHandle): Promise<string | null> {
    try {
      return podFailure(await (await this.core()).readNamespacedPod({ name: String(handle.ref.name), namespace: this.ns }));
    } catch (err) {
      if (apiCode(err) === 404) return 'its pod is gone';
      throw err;
    }
  }

  async stop(handle: PodHandle): Promise<void> {
    const name = String(handle.ref.name);
    const core = await this.core();
    for (const del of [
      () => core.deleteNamespacedPod({ name, namespace: this.ns, gracePeriodSeconds: 5 }),
      () => core.deleteNamespacedSecret({ name: `${name}-src`, namespace: this.ns }),
    ]) {
      try { await del(); } catch (err) { if (apiCode(err) !== 404) throw err; }
    }
  }

  async deliver(handle: PodHandle, appName: string, source: string): Promise<void> {
    const key = `${appName}.py`;
    const name = `${String(handle.ref.name)}-src`;
    const [core, { setHeaderOptions, PatchStrategy }] = await Promise.all([this.core(), loadK8s()]);
    const cur = await core.readNamespacedSecret({ name, namespace: this.ns });
    if (cur.data?.[key]) return; // delivered once per launch, as the subprocess launcher does
    await core.patchNamespacedSecret({ name, namespace: this.ns, body: { data: { [key]: b64(source) } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
  }
}
