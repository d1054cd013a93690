// Kept pods (taskRunner.delete false): when each ended, and their removal after
// workflow.kept_container_retention_days (the maintenance queue's kept-container-retention).
import type { Logger } from 'pino';
import type { CoreV1Api, V1Pod } from '@kubernetes/client-node';
import { RUNNER_LABELS } from '../types.js';
import { ENDED_AT_ANNOTATION } from './names.js';
import { allStatuses, apiMessage, type PodApi } from './pod-api.js';

/** End of a kept pod: its svc/ended-at annotation, else the last container end it reports. */
export function endedAt(pod: V1Pod): number | null {
  const ann = Date.parse(pod.metadata?.annotations?.[ENDED_AT_ANNOTATION] ?? '');
  if (Number.isFinite(ann)) return ann;
  const phase = pod.status?.phase;
  if (phase !== 'Succeeded' && phase !== 'Failed') return null;
  let last: number | null = null;
  for (const st of allStatuses(pod)) {
    const f = st.state?.terminated?.finishedAt;
    const t = f ? new Date(f as unknown as string).getTime() : NaN;
    if (Number.isFinite(t) && (last === null || t > last)) last = t;
  }
  return last;
}

export async function removeKeptPods(core: CoreV1Api, ns: string, pods: PodApi, olderThan: Date, log?: Logger): Promise<number> {
  const { deletePod } = pods;
  let removed = 0;
  let cont: string | undefined;
  do {
    const list = await core.listNamespacedPod({
      namespace: ns,
      labelSelector: `${RUNNER_LABELS.runner}=cluster,${RUNNER_LABELS.kept}=true`,
      limit: 500,
      _continue: cont,
    });
    for (const pod of list.items ?? []) {
      const name = pod.metadata?.name;
      if (!name || pod.metadata?.deletionTimestamp) continue;
      const end = endedAt(pod);
      if (end === null || !(end < olderThan.getTime())) continue;
      try {
        await deletePod(name, 0);
        removed++;
        log?.info({ pod: name, endedAt: new Date(end).toISOString() }, 'removed a kept task pod');
      } catch (err) {
        log?.warn({ pod: name, err: apiMessage(err) }, 'could not remove a kept task pod');
      }
    }
    cont = list.metadata?._continue || undefined;
  } while (cont);
  return removed;
}
