// The Kubernetes API calls of the cluster runner on pods and their input secrets, with the
// answers that are not errors here (404 on a delete, 409 on a create of a leftover) handled once.
import type { Logger } from 'pino';
import type { CoreV1Api, V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import { RUNNER_LABELS } from '../types.js';

export function apiCode(err: unknown): number | undefined {
  const c = (err as { code?: unknown } | null)?.code;
  return typeof c === 'number' ? c : undefined;
}

export function apiMessage(err: unknown): string {
  const e = err as { body?: unknown; message?: string };
  let body = e?.body;
  if (typeof body === 'string') {
    try { body = JSON.parse(body); } catch { /* plain text */ }
  }
  const msg = (body as { message?: string } | undefined)?.message ?? e?.message ?? String(err);
  return String(msg).replace(/\s+/g, ' ').trim();
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Waits for `p`, at most `ms` (the timer is cleared so it keeps no process alive). */
export async function within(p: Promise<unknown>, ms: number): Promise<void> {
  let t: NodeJS.Timeout | undefined;
  await Promise.race([p, new Promise<void>((r) => { t = setTimeout(r, ms); })]);
  clearTimeout(t);
}

export function allStatuses(pod: V1Pod): V1ContainerStatus[] {
  return [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])];
}

export type PodApi = ReturnType<typeof podApi>;

export function podApi(core: CoreV1Api, ns: string, pollMs: number, log?: Logger) {
  async function readPod(name: string): Promise<V1Pod | null> {
    try {
      return await core.readNamespacedPod({ name, namespace: ns });
    } catch (err) {
      if (apiCode(err) === 404) return null;
      throw err;
    }
  }

  async function deletePod(name: string, gracePeriodSeconds: number): Promise<void> {
    try {
      await core.deleteNamespacedPod({ name, namespace: ns, gracePeriodSeconds, propagationPolicy: 'Background' });
    } catch (err) {
      if (apiCode(err) !== 404) throw err;
    }
  }

  async function deleteSecret(name: string): Promise<void> {
    try {
      await core.deleteNamespacedSecret({ name, namespace: ns });
    } catch (err) {
      if (apiCode(err) !== 404) log?.warn({ secret: name, err: apiMessage(err) }, 'could not delete the input secret');
    }
  }

  async function waitGone(name: string, ms: number): Promise<void> {
    const until = Date.now() + ms;
    while (Date.now() < until) {
      if (!(await readPod(name))) return;
      await sleep(Math.min(pollMs, 500));
    }
    throw new Error(`pod ${name} is still terminating after ${Math.round(ms / 1000)} s`);
  }

  /** Creates the pod; a leftover of the same attempt (a worker died mid-run) is replaced. */
  async function createPod(pod: V1Pod): Promise<V1Pod> {
    const name = pod.metadata!.name!;
    try {
      return await core.createNamespacedPod({ namespace: ns, body: pod });
    } catch (err) {
      if (apiCode(err) !== 409) throw err;
      const old = await readPod(name);
      if (old && old.metadata?.labels?.[RUNNER_LABELS.runner] !== 'cluster') {
        throw new Error(`pod name ${name} is taken by a pod this runner does not own`);
      }
      log?.warn({ pod: name }, 'replacing a leftover pod of the same attempt');
      await deletePod(name, 0);
      await waitGone(name, 60_000);
      return core.createNamespacedPod({ namespace: ns, body: pod });
    }
  }

  async function createSecret(name: string, podName: string, data: Record<string, string>): Promise<void> {
    const body = {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'Opaque',
      metadata: { name, namespace: ns, labels: { [RUNNER_LABELS.runner]: 'cluster', [RUNNER_LABELS.attempt]: podName } },
      data,
    };
    try {
      await core.createNamespacedSecret({ namespace: ns, body });
    } catch (err) {
      if (apiCode(err) !== 409) throw err;
      await deleteSecret(name);
      await core.createNamespacedSecret({ namespace: ns, body });
    }
  }

  /** Why a pod failed before main ran: the failed init container, its exit and last log lines. */
  async function describeFailure(pod: V1Pod): Promise<string> {
    const name = pod.metadata!.name!;
    for (const st of pod.status?.initContainerStatuses ?? []) {
      const t = st.state?.terminated;
      if (!t || t.exitCode === 0) continue;
      let tail = '';
      try {
        const text = await core.readNamespacedPodLog({ name, namespace: ns, container: st.name, tailLines: 5 });
        tail = String(text ?? '').trim().replace(/\s+/g, ' ').slice(0, 500);
      } catch (err) {
        log?.debug({ pod: name, container: st.name, err: apiMessage(err) }, 'init container log not read (the failure is reported without it)');
      }
      return `init container ${st.name} (image ${st.image}) exited ${t.exitCode}${t.reason ? ` (${t.reason})` : ''}${tail ? `: ${tail}` : ''}`;
    }
    return [pod.status?.reason, pod.status?.message].filter(Boolean).join(': ') || 'no reason given';
  }

  return { readPod, deletePod, deleteSecret, waitGone, createPod, createSecret, describeFailure };
}
