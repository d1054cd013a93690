// `cluster` runner: one Kubernetes pod per task-run attempt in `workflow.cluster.namespace`,
// driven through the Kubernetes API only (no exec, no port-forward). See docs/runners.md.
//
// Pod layout (every container runs as `run_as_user`, non-root, no privilege escalation, all
// capabilities dropped):
//   volumes:          svc-work (emptyDir, mounted at spec.workingDir in every container)
//                     svc-in   (the attempt's input Secret, only when there are input files)
//                     svc-tmp  (emptyDir scratch of the output helper)
//   initContainers:   svc-input  (helper_image; copies the Secret's files into svc-work)
//                     svc-output (helper_image; a native sidecar, restartPolicy Always, only when
//                                 outputFiles is not empty: sleeps until the kubelet stops it after
//                                 the main container ended, then prints a base64 tar.gz of the
//                                 matching files between two marker lines to its own log)
//   containers:       main (the task: image, command, env, workingDir, resources)
// The runner reads the main container's log (follow, with timestamps so a dropped connection is
// resumed without duplicates) and, once the pod ended, the svc-output container's log.
//
// The modules beside this one, by concern: pod-spec.ts (the pod), pod-api.ts (API calls),
// run.ts (one attempt), log-follower.ts, output-log.ts, scripts.ts (+ input.sh, output.sh),
// resources.ts, names.ts, kept.ts.
import type { Logger } from 'pino';
import { CoreV1Api, KubeConfig, Log } from '@kubernetes/client-node';
import type { ContainerRunner } from '../types.js';
import { checkResources } from './resources.js';
import type { PodSpecOptions } from './pod-spec.js';
import { podApi } from './pod-api.js';
import { runTaskPod } from './run.js';
import { removeKeptPods } from './kept.js';

export { POD_NAMES, ENDED_AT_ANNOTATION, ATTEMPT_ANNOTATION, podNameFor, labelValue } from './names.js';
export { normaliseQuantity, parseQuantity, effectiveResources } from './resources.js';
export { INPUT_SCRIPT, OUTPUT_SCRIPT } from './scripts.js';
export { parseOutputLog } from './output-log.js';

export interface ClusterRunnerOptions extends PodSpecOptions {
  /** Defaults to `loadFromDefault()` (in-cluster service account or ~/.kube/config). */
  kubeConfig?: KubeConfig;
  log?: Logger;
  /** Interval of pod status reads (default 1000 ms). */
  pollMs?: number;
  /** How long an image may stay in ErrImagePull/ImagePullBackOff before the run fails (default 120 s). */
  imagePullTimeoutMs?: number;
  clock?: { now(): Date };
}

export interface ClusterRunner extends ContainerRunner {
  readonly kind: 'cluster';
}

export function createClusterRunner(opts: ClusterRunnerOptions): ClusterRunner {
  const kc = opts.kubeConfig ?? (() => { const k = new KubeConfig(); k.loadFromDefault(); return k; })();
  const core = kc.makeApiClient(CoreV1Api);
  const logApi = new Log(kc);
  const ns = opts.namespace;
  const log = opts.log;
  const pollMs = opts.pollMs ?? 1000;
  const pullTimeoutMs = opts.imagePullTimeoutMs ?? 120_000;
  const clock = opts.clock ?? { now: () => new Date() };
  if (!Number.isInteger(opts.runAsUser) || opts.runAsUser <= 0) throw new Error('workflow.cluster.run_as_user must be a positive integer');
  checkResources(opts.defaultResources, 'workflow.cluster.default_resources');
  checkResources(opts.maxResources, 'workflow.cluster.max_resources');

  const pods = podApi(core, ns, pollMs, log);
  const ctx = {
    core, logApi, pods, log, pollMs, pullTimeoutMs, clock,
    podSpec: { namespace: ns, defaultResources: opts.defaultResources, maxResources: opts.maxResources, runAsUser: opts.runAsUser, imagePullSecrets: opts.imagePullSecrets, helperImage: opts.helperImage },
  };
  return {
    kind: 'cluster',
    run: (spec, cb) => runTaskPod(ctx, spec, cb),
    removeKept: (olderThan) => removeKeptPods(core, ns, pods, olderThan, log),
  };
}
