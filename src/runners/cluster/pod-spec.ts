// The pod of one task-run attempt (layout in ../cluster.ts's header): built from the task spec and
// the runner's options, no I/O. Every container runs as run_as_user, non-root, without privilege
// escalation, all capabilities dropped.
import type { Logger } from 'pino';
import type { V1Container, V1Pod, V1ResourceRequirements, V1SecurityContext, V1Volume } from '@kubernetes/client-node';
import { DEFAULT_KILL_GRACE_SECS, RUNNER_LABELS, type ContainerTaskSpec, type Resources } from '../types.js';
import { ATTEMPT_ANNOTATION, POD_NAMES, labelValue, validLabelKey } from './names.js';
import { effectiveResources } from './resources.js';
import { INPUT_SCRIPT, OUTPUT_SCRIPT } from './scripts.js';

export interface PodSpecOptions {
  namespace: string;
  defaultResources: Resources;
  maxResources: Resources;
  runAsUser: number;
  imagePullSecrets: string[];
  helperImage: string;
}

function securityContext(opts: PodSpecOptions): V1SecurityContext {
  return { runAsUser: opts.runAsUser, runAsNonRoot: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } };
}

const helperResources: V1ResourceRequirements = {
  requests: { cpu: '10m', memory: '16Mi' },
  limits: { cpu: '500m', memory: '128Mi' },
};

export function buildPod(opts: PodSpecOptions, spec: ContainerTaskSpec, podName: string, secretName: string | undefined, inputs: string[], log?: Logger): V1Pod {
  const grace = Math.max(0, Math.ceil(spec.killGraceSecs ?? DEFAULT_KILL_GRACE_SECS));
  const labels: Record<string, string> = {};
  for (const [k, v] of Object.entries(spec.labels)) {
    if (!validLabelKey(k)) { log?.warn({ label: k }, 'dropping a label key Kubernetes refuses'); continue; }
    labels[k] = labelValue(v);
  }
  labels[RUNNER_LABELS.runner] = 'cluster';
  labels[RUNNER_LABELS.attempt] = podName;
  labels[RUNNER_LABELS.kept] = spec.delete ? 'false' : 'true';

  const workMount = { name: POD_NAMES.workVolume, mountPath: spec.workingDir };
  const volumes: V1Volume[] = [{ name: POD_NAMES.workVolume, emptyDir: {} }];
  const initContainers: V1Container[] = [];
  if (secretName) {
    volumes.push({
      name: POD_NAMES.inputVolume,
      secret: {
        secretName,
        defaultMode: 0o444,
        items: inputs.map((path, i) => ({ key: `f${i}`, path })),
      },
    });
    initContainers.push({
      name: POD_NAMES.input,
      image: opts.helperImage,
      command: ['/bin/sh', '-c', INPUT_SCRIPT],
      env: [
        { name: 'SVC_WORKDIR', value: spec.workingDir },
        { name: 'SVC_INPUT_DIR', value: POD_NAMES.inputMount },
        { name: 'SVC_INPUT_FILES', value: inputs.join('\n') },
      ],
      volumeMounts: [workMount, { name: POD_NAMES.inputVolume, mountPath: POD_NAMES.inputMount, readOnly: true }],
      resources: helperResources,
      securityContext: securityContext(opts),
    });
  }
  if (spec.outputFiles.length > 0) {
    volumes.push({ name: POD_NAMES.tmpVolume, emptyDir: {} });
    initContainers.push({
      name: POD_NAMES.output,
      image: opts.helperImage,
      // a native sidecar (Kubernetes 1.29+): started before main, stopped after it
      restartPolicy: 'Always',
      command: ['/bin/sh', '-c', OUTPUT_SCRIPT],
      env: [
        { name: 'SVC_WORKDIR', value: spec.workingDir },
        { name: 'SVC_TMP', value: POD_NAMES.tmpMount },
        { name: 'SVC_OUTPUT_PATTERNS', value: spec.outputFiles.join('\n') },
      ],
      volumeMounts: [workMount, { name: POD_NAMES.tmpVolume, mountPath: POD_NAMES.tmpMount }],
      resources: helperResources,
      securityContext: securityContext(opts),
    });
  }
  const main: V1Container = {
    name: POD_NAMES.main,
    image: spec.image,
    command: spec.command,
    env: Object.entries(spec.env).map(([name, value]) => ({ name, value })),
    workingDir: spec.workingDir,
    volumeMounts: [workMount],
    resources: effectiveResources(spec.resources, opts.defaultResources, opts.maxResources),
    securityContext: securityContext(opts),
  };
  const pod: V1Pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: podName, namespace: opts.namespace, labels, annotations: { [ATTEMPT_ANNOTATION]: spec.name } },
    spec: {
      restartPolicy: 'Never',
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      // the output helper needs a moment after main ended; a kill uses killGraceSecs explicitly
      terminationGracePeriodSeconds: Math.max(grace, 30),
      securityContext: { runAsUser: opts.runAsUser, runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
      imagePullSecrets: opts.imagePullSecrets.map((name) => ({ name })),
      initContainers: initContainers.length ? initContainers : undefined,
      containers: [main],
      volumes,
    },
  };
  if (spec.timeoutMs !== undefined) pod.spec!.activeDeadlineSeconds = Math.max(1, Math.ceil(spec.timeoutMs / 1000));
  return pod;
}
