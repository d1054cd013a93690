// Resource quantities of the main container: Kubernetes quantities parsed and normalised, the
// task's values against workflow.cluster.default_resources and max_resources.
import type { V1ResourceRequirements } from '@kubernetes/client-node';
import { RunnerSpecError, type ResourceList, type Resources } from '../types.js';

const SUFFIXES: Record<string, number> = {
  n: 1e-9, u: 1e-6, m: 1e-3, '': 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18,
  Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60,
};
const QUANTITY = /^(\d+(?:\.\d*)?|\.\d+)(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?)$/;

/**
 * Canonical form of a Kubernetes quantity (`100m`, `1`, `0.5`, `128Mi`, `2Gi`, `1e3`). `10GiB`
 * (a byte unit written with `B`) is accepted as `10Gi`. Throws on anything else.
 */
export function normaliseQuantity(q: string): string {
  let s = String(q).trim();
  if (/^[\d.]+[KMGTPE]iB$/.test(s)) s = s.slice(0, -1);
  if (!QUANTITY.test(s)) throw new RunnerSpecError(`resource quantity ${JSON.stringify(q)} is not a Kubernetes quantity (e.g. 100m, 1, 128Mi, 2Gi)`);
  return s;
}

/** Value of a quantity in base units (cores, bytes). */
export function parseQuantity(q: string): number {
  const m = QUANTITY.exec(normaliseQuantity(q))!;
  const n = Number(m[1]);
  if (m[2]) return n * 10 ** Number(m[2].slice(1));
  return n * SUFFIXES[m[3] ?? '']!;
}

const RESOURCE_KEYS = [
  ['cpu', 'cpu'],
  ['memory', 'memory'],
  ['ephemeral_storage', 'ephemeral-storage'],
] as const;

const given = (v: string | undefined | null): string | undefined => (typeof v === 'string' && v.trim() !== '' ? v : undefined);

/**
 * The main container's resources: per quantity, the task's value or else the default; then every
 * limit is capped by max.limit and every request by max.request (when set); a request above its
 * limit is lowered to the limit, except that a task asking a request without a limit first raises
 * the limit (still capped) to that request.
 */
export function effectiveResources(task: Resources | undefined, defaults: Resources, max: Resources): V1ResourceRequirements {
  const requests: Record<string, string> = {};
  const limits: Record<string, string> = {};
  for (const [key, k8s] of RESOURCE_KEYS) {
    const taskReq = given(task?.request?.[key]);
    const taskLim = given(task?.limit?.[key]);
    let req = taskReq ?? given(defaults.request?.[key]);
    let lim = taskLim ?? given(defaults.limit?.[key]);
    req = req === undefined ? undefined : normaliseQuantity(req);
    lim = lim === undefined ? undefined : normaliseQuantity(lim);
    if (taskReq !== undefined && taskLim === undefined && req !== undefined && lim !== undefined && parseQuantity(req) > parseQuantity(lim)) {
      lim = req;
    }
    const capLim = given(max.limit?.[key]);
    const capReq = given(max.request?.[key]);
    if (lim !== undefined && capLim !== undefined && parseQuantity(lim) > parseQuantity(capLim)) lim = normaliseQuantity(capLim);
    if (req !== undefined && capReq !== undefined && parseQuantity(req) > parseQuantity(capReq)) req = normaliseQuantity(capReq);
    if (req !== undefined && lim !== undefined && parseQuantity(req) > parseQuantity(lim)) req = lim;
    if (req !== undefined) requests[k8s] = req;
    if (lim !== undefined) limits[k8s] = lim;
  }
  const out: V1ResourceRequirements = {};
  if (Object.keys(requests).length) out.requests = requests;
  if (Object.keys(limits).length) out.limits = limits;
  return out;
}

export function checkResources(r: Resources, what: string): void {
  for (const kind of ['request', 'limit'] as const) {
    const list: ResourceList | undefined = r[kind];
    for (const [key] of RESOURCE_KEYS) {
      const v = given(list?.[key]);
      if (v === undefined) continue;
      try {
        normaliseQuantity(v);
      } catch {
        throw new Error(`${what}.${kind}.${key} = ${JSON.stringify(v)} is not a Kubernetes quantity`);
      }
    }
  }
}
