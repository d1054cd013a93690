// One task-run attempt as a pod: create its input secret and the pod, poll the pod until it ends
// (following the main container's log, failing fast on images that cannot start), stop it on a
// kill or timeout, drain the log, collect the output files, then delete or keep the pod.
import type { Logger } from 'pino';
import { PatchStrategy, setHeaderOptions, type CoreV1Api, type Log, type V1Pod } from '@kubernetes/client-node';
import { DEFAULT_KILL_GRACE_SECS, RUNNER_LABELS, RunnerSpecError, normaliseRelativePath, type ContainerRunResult, type ContainerTaskSpec, type RunCallbacks } from '../types.js';
import { ENDED_AT_ANNOTATION, POD_NAMES, podNameFor } from './names.js';
import { effectiveResources } from './resources.js';
import { parseOutputLog } from './output-log.js';
import { LogFollower } from './log-follower.js';
import { buildPod, type PodSpecOptions } from './pod-spec.js';
import { allStatuses, apiMessage, within, type PodApi } from './pod-api.js';

const FATAL_WAITING = new Set(['InvalidImageName', 'ErrImageNeverPull', 'CreateContainerConfigError', 'CreateContainerError', 'RunContainerError']);
const PULL_WAITING = new Set(['ErrImagePull', 'ImagePullBackOff']);

export interface RunContext {
  core: CoreV1Api;
  logApi: Log;
  pods: PodApi;
  podSpec: PodSpecOptions;
  log?: Logger;
  pollMs: number;
  pullTimeoutMs: number;
  clock: { now(): Date };
}

/** Refuses a spec the pod could not run; the input files as Secret data (f0, f1, ...) and their paths. */
function checkSpec(spec: ContainerTaskSpec, opts: PodSpecOptions): { inputPaths: string[]; secretData: Record<string, string> } {
  if (!spec.command.length) throw new RunnerSpecError('command must not be empty');
  if (!spec.workingDir.startsWith('/')) throw new RunnerSpecError(`workingDir ${JSON.stringify(spec.workingDir)} must be absolute`);
  if (!spec.image.trim()) throw new RunnerSpecError('image must not be empty');
  const inputPaths: string[] = [];
  const secretData: Record<string, string> = {};
  for (const [p, bytes] of Object.entries(spec.inputFiles)) {
    const rel = normaliseRelativePath(p);
    secretData[`f${inputPaths.length}`] = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
    inputPaths.push(rel);
  }
  effectiveResources(spec.resources, opts.defaultResources, opts.maxResources); // refuses bad quantities early
  return { inputPaths, secretData };
}

/**
 * Fails a run whose containers cannot start (a fatal waiting reason) or whose image stayed
 * unpullable for pullTimeoutMs; returns when the current pull wait began (0: none waiting).
 */
function checkWaiting(pod: V1Pod, podName: string, pullWaitingSince: number, pullTimeoutMs: number): number {
  let since = pullWaitingSince;
  for (const st of allStatuses(pod)) {
    const reason = st.state?.waiting?.reason ?? '';
    const message = (st.state?.waiting?.message ?? reason).replace(/\s+/g, ' ').trim();
    if (FATAL_WAITING.has(reason)) {
      throw new Error(`container ${st.name} (image ${st.image}) of pod ${podName} cannot start: ${reason}: ${message}`);
    }
    if (PULL_WAITING.has(reason)) {
      since ||= Date.now();
      if (Date.now() - since >= pullTimeoutMs) {
        throw new Error(`image ${st.image} could not be pulled for container ${st.name} of pod ${podName}: ${message}`);
      }
    }
  }
  return allStatuses(pod).some((st) => PULL_WAITING.has(st.state?.waiting?.reason ?? '')) ? since : 0;
}

export async function runTaskPod(ctx: RunContext, spec: ContainerTaskSpec, cb: RunCallbacks): Promise<ContainerRunResult> {
  const { core, logApi, log, pollMs, pullTimeoutMs, clock } = ctx;
  const { readPod, deletePod, deleteSecret, createPod, createSecret, describeFailure } = ctx.pods;
  const ns = ctx.podSpec.namespace;
  const opts = ctx.podSpec;
  const { inputPaths, secretData } = checkSpec(spec, opts);
  if (cb.signal.aborted) return { exitCode: null, outcome: 'killed', outputFiles: {} };

  const podName = podNameFor(spec.name);
  const secretName = inputPaths.length ? `${podName}-in` : undefined;
  const grace = Math.max(0, Math.ceil(spec.killGraceSecs ?? DEFAULT_KILL_GRACE_SECS));
  const pod = buildPod(opts, spec, podName, secretName, inputPaths, log);

  let created = false;
  let podGone = false;
  let keep = false;
  let stopReason: 'killed' | 'timeout' | null = null;
  let deletion: Promise<void> | undefined;
  let stopRequestedAt = 0;
  let wake: () => void = () => {};
  let timer: NodeJS.Timeout | undefined;
  const follower = new LogFollower(logApi, ns, podName, POD_NAMES.main, (line) => cb.onLog(line, 'stdout'), log);

  const startDeletion = () => {
    if (deletion || !created) return;
    log?.info({ pod: podName, reason: stopReason, grace }, 'deleting task pod');
    deletion = deletePod(podName, grace).catch((err: unknown) => {
      log?.warn({ pod: podName, err: apiMessage(err) }, 'deleting the pod failed');
    });
  };
  const requestStop = (reason: 'killed' | 'timeout') => {
    if (stopReason) return;
    stopReason = reason;
    stopRequestedAt = Date.now();
    startDeletion();
    wake();
  };
  const onAbort = () => requestStop('killed');

  try {
    if (secretName) {
      await createSecret(secretName, podName, secretData).catch((err: unknown) => {
        throw new Error(`creating secret ${secretName} in namespace ${ns} failed: ${apiMessage(err)}`);
      });
    }
    const createdPod = await createPod(pod).catch((err: unknown) => {
      throw new Error(`creating pod ${podName} in namespace ${ns} failed: ${apiMessage(err)}`);
    });
    created = true;
    if (secretName && createdPod.metadata?.uid) {
      // the pod owns its input secret: Kubernetes removes it with the pod should this process die
      await core
        .patchNamespacedSecret(
          {
            name: secretName,
            namespace: ns,
            body: { metadata: { ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: podName, uid: createdPod.metadata.uid }] } },
          },
          setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
        )
        .catch((err: unknown) => log?.warn({ secret: secretName, err: apiMessage(err) }, 'could not set the owner of the input secret'));
    }
    cb.signal.addEventListener('abort', onAbort, { once: true });
    if (cb.signal.aborted) onAbort();
    if (spec.timeoutMs !== undefined) timer = setTimeout(() => requestStop('timeout'), Math.max(0, spec.timeoutMs));

    let exitCode: number | null = null;
    let mainStarted = false;
    let deadlineExceeded = false;
    let pullWaitingSince = 0;
    let readFailures = 0;
    for (;;) {
      // undefined: this read failed (transient API trouble), null: the pod is gone
      let current: V1Pod | null | undefined;
      try {
        current = await readPod(podName);
        readFailures = 0;
      } catch (err) {
        if (++readFailures >= 10) throw new Error(`reading pod ${podName} failed 10 times: ${apiMessage(err)}`);
        log?.warn({ pod: podName, err: apiMessage(err) }, 'reading the pod failed; retrying');
      }
      if (current === null) {
        podGone = true;
        if (stopReason) break;
        throw new Error(`pod ${podName} was deleted before it finished`);
      }
      if (current) {
        const main = current.status?.containerStatuses?.find((c) => c.name === POD_NAMES.main);
        const term = main?.state?.terminated ?? (main?.state?.running ? undefined : main?.lastState?.terminated);
        if (term && typeof term.exitCode === 'number') exitCode = term.exitCode;
        if (main?.state?.running || main?.state?.terminated) mainStarted = true;
        if (mainStarted && !main?.state?.terminated && !follower.active && !stopReason) void follower.open(true);
        const phase = current.status?.phase;
        if (phase === 'Succeeded' || phase === 'Failed') {
          deadlineExceeded = current.status?.reason === 'DeadlineExceeded';
          if (phase === 'Failed' && !mainStarted && !deadlineExceeded && !stopReason) {
            throw new Error(`pod ${podName} failed before its main container started: ${await describeFailure(current)}`);
          }
          break;
        }
        if (!stopReason) pullWaitingSince = checkWaiting(current, podName, pullWaitingSince, pullTimeoutMs);
      }
      if (stopReason && Date.now() - stopRequestedAt > (grace + 30) * 1000) {
        log?.warn({ pod: podName }, 'the pod did not end within its grace period; giving up waiting');
        break;
      }
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, pollMs);
        wake = () => { clearTimeout(t); resolve(); };
      });
      wake = () => {};
    }
    clearTimeout(timer);
    cb.signal.removeEventListener('abort', onAbort);
    if (deletion) await deletion;

    // the rest of the main log: let an open connection drain, then one catch-up read (deduplicated)
    if (follower.active) await within(follower.open(true), 5000);
    follower.cancel();
    if (!podGone && mainStarted) {
      await within(follower.open(false), 30_000);
      follower.cancel();
    }
    follower.flush();

    const outcome: ContainerRunResult['outcome'] = stopReason ?? (deadlineExceeded ? 'timeout' : 'exited');
    let outputFiles: Record<string, Uint8Array> = {};
    if (outcome === 'exited' && spec.outputFiles.length > 0) {
      const text = await core.readNamespacedPodLog({ name: podName, namespace: ns, container: POD_NAMES.output });
      outputFiles = await parseOutputLog(String(text ?? ''), spec.outputFiles, spec.outputLimits, cb.onOutputFile);
    }
    keep = outcome === 'exited' && !spec.delete && !podGone;
    log?.info({ pod: podName, exitCode, outcome, kept: keep }, 'task pod finished');
    return { exitCode, outcome, outputFiles };
  } finally {
    clearTimeout(timer);
    cb.signal.removeEventListener('abort', onAbort);
    follower.cancel();
    if (secretName) await deleteSecret(secretName);
    if (created && !podGone) {
      if (keep) {
        await core
          .patchNamespacedPod(
            {
              name: podName,
              namespace: ns,
              body: { metadata: { labels: { [RUNNER_LABELS.kept]: 'true' }, annotations: { [ENDED_AT_ANNOTATION]: clock.now().toISOString() } } },
            },
            setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
          )
          .catch((err: unknown) => log?.warn({ pod: podName, err: apiMessage(err) }, 'could not annotate the kept pod'));
      } else if (!deletion) {
        await deletePod(podName, 0).catch((err: unknown) => log?.error({ pod: podName, err: apiMessage(err) }, 'could not delete the task pod'));
      }
    }
  }
}
