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
import { createHash } from 'node:crypto';
import { Writable } from 'node:stream';
import { gunzipSync } from 'node:zlib';
import * as tar from 'tar-stream';
import type { Logger } from 'pino';
import {
  CoreV1Api,
  KubeConfig,
  Log,
  PatchStrategy,
  setHeaderOptions,
  type V1Container,
  type V1ContainerStatus,
  type V1Pod,
  type V1ResourceRequirements,
  type V1SecurityContext,
  type V1Volume,
} from '@kubernetes/client-node';
import {
  DEFAULT_KILL_GRACE_SECS,
  RUNNER_LABELS,
  RunnerSpecError,
  matchesAnyOutput,
  normaliseRelativePath,
  type ContainerRunResult,
  type ContainerRunner,
  type ContainerTaskSpec,
  type ResourceList,
  type Resources,
  type RunCallbacks,
} from './types.js';

export interface ClusterRunnerOptions {
  /** Defaults to `loadFromDefault()` (in-cluster service account or ~/.kube/config). */
  kubeConfig?: KubeConfig;
  namespace: string;
  defaultResources: Resources;
  maxResources: Resources;
  runAsUser: number;
  imagePullSecrets: string[];
  helperImage: string;
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

/** Names of the containers and volumes of a task pod. */
export const POD_NAMES = {
  main: 'main',
  input: 'svc-input',
  output: 'svc-output',
  workVolume: 'svc-work',
  inputVolume: 'svc-in',
  tmpVolume: 'svc-tmp',
  inputMount: '/svc/in',
  tmpMount: '/svc/tmp',
} as const;

/** Annotation holding the end time of a kept pod (RFC 3339). */
export const ENDED_AT_ANNOTATION = 'svc/ended-at';
/** Annotation holding the unmodified attempt name. */
export const ATTEMPT_ANNOTATION = 'svc/attempt';

const OUTPUT_BEGIN = 'svc-output-begin';
const OUTPUT_END = 'svc-output-end';
const OUTPUT_ERROR = 'svc-output-error';

// ---------------------------------------------------------------------------------------------
// Helper scripts (POSIX sh; helper_image needs sh, cat, mkdir, dirname, find, tar, gzip, base64,
// wc, sleep: a busybox image has them all). Paths come from the environment so that the scripts
// can be exercised outside a pod.
// ---------------------------------------------------------------------------------------------

/** svc-input: copies SVC_INPUT_FILES (newline separated) from SVC_INPUT_DIR into SVC_WORKDIR. */
export const INPUT_SCRIPT = `set -eu
while IFS= read -r f; do
  [ -n "$f" ] || continue
  mkdir -p "$SVC_WORKDIR/$(dirname "$f")"
  cat "$SVC_INPUT_DIR/$f" > "$SVC_WORKDIR/$f"
done <<SVC_EOF
$SVC_INPUT_FILES
SVC_EOF
`;

/**
 * svc-output: waits for SIGTERM (sent by the kubelet once the main container ended), then prints
 * the files of SVC_WORKDIR matching SVC_OUTPUT_PATTERNS (newline separated shell patterns, a
 * superset of the runner's glob; the runner filters again) as a base64 tar.gz between markers.
 */
export const OUTPUT_SCRIPT = `collect() {
  cd "$SVC_WORKDIR" 2>/dev/null || { echo "${OUTPUT_ERROR} cannot enter the working directory"; exit 0; }
  find . -type f > "$SVC_TMP/all" 2>/dev/null
  set --
  while IFS= read -r f; do
    r="\${f#./}"
    keep=
    old_ifs=$IFS
    IFS='
'
    set -f
    for p in $SVC_OUTPUT_PATTERNS; do
      case "$r" in $p|$p/*) keep=1; break ;; esac
    done
    set +f
    IFS=$old_ifs
    [ -z "$keep" ] || set -- "$@" "./$r"
  done < "$SVC_TMP/all"
  if [ $# -eq 0 ]; then echo "${OUTPUT_BEGIN}"; echo "${OUTPUT_END} 0 0"; exit 0; fi
  rm -f "$SVC_TMP/out.tar" "$SVC_TMP/out.tar.gz"
  if tar cf "$SVC_TMP/out.tar" "$@" 2>"$SVC_TMP/err" && gzip -f "$SVC_TMP/out.tar" 2>>"$SVC_TMP/err"; then
    echo "${OUTPUT_BEGIN}"
    base64 "$SVC_TMP/out.tar.gz"
    echo "${OUTPUT_END} $# $(wc -c < "$SVC_TMP/out.tar.gz")"
  else
    echo "${OUTPUT_ERROR} $(head -c 400 "$SVC_TMP/err" | tr '\\n' ' ')"
  fi
  exit 0
}
trap collect TERM
while :; do sleep 3600 & wait $!; done
`;

// ---------------------------------------------------------------------------------------------
// Resource quantities
// ---------------------------------------------------------------------------------------------

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

function checkResources(r: Resources, what: string): void {
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

// ---------------------------------------------------------------------------------------------
// Names and labels
// ---------------------------------------------------------------------------------------------

const shortHash = (s: string) => createHash('sha256').update(s).digest('hex').slice(0, 8);

/** DNS-1123 label from an attempt name (at most 63 characters; a hash keeps long names unique). */
export function podNameFor(name: string): string {
  let s = name.toLowerCase().replace(/[^a-z0-9-]+/g, '-').replace(/-+/g, '-').replace(/^-+|-+$/g, '');
  if (s === '') s = 'svc-task';
  if (s.length > 63 || s !== name) {
    if (s.length > 54) s = s.slice(0, 54).replace(/-+$/, '');
    if (s !== name) s = `${s}-${shortHash(name)}`;
  }
  return s;
}

const LABEL_NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const LABEL_PREFIX = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;

function validLabelKey(key: string): boolean {
  const slash = key.lastIndexOf('/');
  if (slash < 0) return LABEL_NAME.test(key);
  return LABEL_PREFIX.test(key.slice(0, slash)) && LABEL_NAME.test(key.slice(slash + 1));
}

/** A label value Kubernetes accepts: at most 63 of [A-Za-z0-9._-], alphanumeric at both ends. */
export function labelValue(v: string): string {
  return v.replace(/[^A-Za-z0-9._-]+/g, '_').slice(0, 63).replace(/^[^A-Za-z0-9]+|[^A-Za-z0-9]+$/g, '');
}

// ---------------------------------------------------------------------------------------------
// Output log parsing
// ---------------------------------------------------------------------------------------------

/** Decodes the svc-output container's log into files (relative paths) matching `outputFiles`. */
export async function parseOutputLog(logText: string, outputFiles: string[]): Promise<Record<string, Uint8Array>> {
  const lines = logText.split('\n').map((l) => l.replace(/\r$/, ''));
  const err = lines.find((l) => l.startsWith(OUTPUT_ERROR));
  if (err) throw new Error(`collecting output files failed in the helper container: ${err.slice(OUTPUT_ERROR.length).trim()}`);
  const begin = lines.lastIndexOf(OUTPUT_BEGIN);
  const endIdx = lines.findIndex((l, i) => i > begin && l.startsWith(OUTPUT_END));
  if (begin < 0 || endIdx < 0) {
    throw new Error('collecting output files failed: the helper container log holds no complete archive (too large for the container log, or the helper was stopped early)');
  }
  const [, countStr, bytesStr] = lines[endIdx]!.trim().split(/\s+/);
  const count = Number(countStr);
  const bytes = Number(bytesStr);
  if (count === 0) return {};
  const gz = Buffer.from(lines.slice(begin + 1, endIdx).join(''), 'base64');
  if (gz.length !== bytes) throw new Error(`collecting output files failed: archive of ${gz.length} bytes, the helper wrote ${bytes}`);
  const tarBuf = gunzipSync(gz);
  const keep = matchesAnyOutput(outputFiles);
  const out: Record<string, Uint8Array> = {};
  const extract = tar.extract();
  const done = (async () => {
    for await (const entry of extract) {
      const chunks: Buffer[] = [];
      for await (const c of entry) chunks.push(Buffer.from(c as Uint8Array));
      if (entry.header.type !== 'file' && entry.header.type !== 'contiguous-file') continue;
      let rel: string;
      try {
        rel = normaliseRelativePath(entry.header.name);
      } catch {
        continue;
      }
      if (keep(rel)) out[rel] = new Uint8Array(Buffer.concat(chunks));
    }
  })();
  extract.end(tarBuf);
  await done;
  return out;
}

// ---------------------------------------------------------------------------------------------
// Main container log following
// ---------------------------------------------------------------------------------------------

/** Comparable key of an RFC 3339 timestamp (fraction padded to nanoseconds), or null. */
function tsKey(ts: string): string | null {
  const m = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?Z$/.exec(ts);
  if (!m) return null;
  return `${m[1]}.${(m[2] ?? '').padEnd(9, '0')}`;
}

/**
 * Follows the log of one container with timestamps. A connection that ends early is reopened
 * with sinceTime; lines already delivered (same or earlier timestamp) are skipped.
 */
class LogFollower {
  private lastKey = '';
  private lastTs = '';
  private countAtLast = 0;
  private partial = '';
  private current?: { controller?: AbortController; cancel: () => void; done: Promise<void> };
  connections = 0;

  constructor(
    private readonly logApi: Log,
    private readonly namespace: string,
    private readonly pod: string,
    private readonly container: string,
    private readonly emit: (line: string) => void,
    private readonly log?: Logger,
  ) {}

  get active(): boolean { return this.current !== undefined; }

  private deliver(raw: string, replay: { skip: number }): void {
    const sp = raw.indexOf(' ');
    const key = sp > 0 ? tsKey(raw.slice(0, sp)) : null;
    if (key === null) { this.emit(raw); return; }
    const text = raw.slice(sp + 1);
    if (key < this.lastKey) return;
    if (key === this.lastKey) {
      if (replay.skip > 0) { replay.skip--; return; }
      this.countAtLast++;
    } else {
      this.lastKey = key;
      this.lastTs = raw.slice(0, sp);
      this.countAtLast = 1;
      replay.skip = 0;
    }
    this.emit(text);
  }

  /** Opens one connection (follow or not); resolves when it ends, fails or is cancelled. */
  open(follow: boolean): Promise<void> {
    if (this.current) return this.current.done;
    this.partial = '';
    this.connections++;
    const replay = { skip: this.lastKey ? this.countAtLast : 0 };
    const decoder = new TextDecoder('utf-8');
    let buf = '';
    let resolveDone!: () => void;
    const done = new Promise<void>((r) => { resolveDone = r; });
    const sink = new Writable({
      write: (chunk: Buffer, _enc, cb) => {
        buf += decoder.decode(chunk, { stream: true });
        let nl = buf.indexOf('\n');
        while (nl >= 0) {
          const line = buf.slice(0, nl).replace(/\r$/, '');
          buf = buf.slice(nl + 1);
          this.deliver(line, replay);
          nl = buf.indexOf('\n');
        }
        cb();
      },
      final: (cb) => {
        buf += decoder.decode();
        // a last line without newline: delivered only once the container is known to have ended
        this.partial = buf;
        cb();
      },
    });
    const cur: NonNullable<LogFollower['current']> = { cancel: () => resolveDone(), done };
    this.current = cur;
    sink.on('finish', () => resolveDone());
    sink.on('error', () => resolveDone());
    const opts: Record<string, unknown> = { follow, timestamps: true };
    if (this.lastTs) opts.sinceTime = this.lastTs.replace(/\.\d+Z$/, 'Z');
    this.logApi
      .log(this.namespace, this.pod, this.container, sink, opts)
      .then((controller) => { cur.controller = controller; })
      .catch((err: unknown) => {
        const code = (err as { code?: number }).code;
        // 400: the container is not running yet; the caller retries on its next poll
        if (code !== 400) this.log?.debug({ pod: this.pod, err: String((err as Error).message ?? err) }, 'log request failed');
        resolveDone();
      });
    void done.then(() => {
      if (this.current === cur) this.current = undefined;
    });
    return done;
  }

  /** Closes the open connection, if any. */
  cancel(): void {
    const cur = this.current;
    if (!cur) return;
    cur.controller?.abort();
    cur.cancel();
    this.current = undefined;
  }

  /** Delivers a last line that had no trailing newline. */
  flush(): void {
    if (this.partial) {
      const p = this.partial;
      this.partial = '';
      this.deliver(p, { skip: 0 });
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The runner
// ---------------------------------------------------------------------------------------------

function apiCode(err: unknown): number | undefined {
  const c = (err as { code?: unknown } | null)?.code;
  return typeof c === 'number' ? c : undefined;
}

function apiMessage(err: unknown): string {
  const e = err as { body?: unknown; message?: string };
  let body = e?.body;
  if (typeof body === 'string') {
    try { body = JSON.parse(body); } catch { /* plain text */ }
  }
  const msg = (body as { message?: string } | undefined)?.message ?? e?.message ?? String(err);
  return String(msg).replace(/\s+/g, ' ').trim();
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Waits for `p`, at most `ms` (the timer is cleared so it keeps no process alive). */
async function within(p: Promise<unknown>, ms: number): Promise<void> {
  let t: NodeJS.Timeout | undefined;
  await Promise.race([p, new Promise<void>((r) => { t = setTimeout(r, ms); })]);
  clearTimeout(t);
}

const FATAL_WAITING = new Set(['InvalidImageName', 'ErrImageNeverPull', 'CreateContainerConfigError', 'CreateContainerError', 'RunContainerError']);
const PULL_WAITING = new Set(['ErrImagePull', 'ImagePullBackOff']);

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

  const securityContext = (): V1SecurityContext => ({
    runAsUser: opts.runAsUser,
    runAsNonRoot: true,
    allowPrivilegeEscalation: false,
    capabilities: { drop: ['ALL'] },
  });
  const helperResources: V1ResourceRequirements = {
    requests: { cpu: '10m', memory: '16Mi' },
    limits: { cpu: '500m', memory: '128Mi' },
  };

  function buildPod(spec: ContainerTaskSpec, podName: string, secretName: string | undefined, inputs: string[]): V1Pod {
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
        securityContext: securityContext(),
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
        securityContext: securityContext(),
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
      securityContext: securityContext(),
    };
    const pod: V1Pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: podName, namespace: ns, labels, annotations: { [ATTEMPT_ANNOTATION]: spec.name } },
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

  function allStatuses(pod: V1Pod): V1ContainerStatus[] {
    return [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])];
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
      } catch { /* the log is a bonus */ }
      return `init container ${st.name} (image ${st.image}) exited ${t.exitCode}${t.reason ? ` (${t.reason})` : ''}${tail ? `: ${tail}` : ''}`;
    }
    return [pod.status?.reason, pod.status?.message].filter(Boolean).join(': ') || 'no reason given';
  }

  async function run(spec: ContainerTaskSpec, cb: RunCallbacks): Promise<ContainerRunResult> {
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
    if (cb.signal.aborted) return { exitCode: null, outcome: 'killed', outputFiles: {} };

    const podName = podNameFor(spec.name);
    const secretName = inputPaths.length ? `${podName}-in` : undefined;
    const grace = Math.max(0, Math.ceil(spec.killGraceSecs ?? DEFAULT_KILL_GRACE_SECS));
    const pod = buildPod(spec, podName, secretName, inputPaths);

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
          if (!stopReason) {
            for (const st of allStatuses(current)) {
              const reason = st.state?.waiting?.reason ?? '';
              const message = (st.state?.waiting?.message ?? reason).replace(/\s+/g, ' ').trim();
              if (FATAL_WAITING.has(reason)) {
                throw new Error(`container ${st.name} (image ${st.image}) of pod ${podName} cannot start: ${reason}: ${message}`);
              }
              if (PULL_WAITING.has(reason)) {
                pullWaitingSince ||= Date.now();
                if (Date.now() - pullWaitingSince >= pullTimeoutMs) {
                  throw new Error(`image ${st.image} could not be pulled for container ${st.name} of pod ${podName}: ${message}`);
                }
              }
            }
            if (!allStatuses(current).some((st) => PULL_WAITING.has(st.state?.waiting?.reason ?? ''))) pullWaitingSince = 0;
          }
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
        outputFiles = await parseOutputLog(String(text ?? ''), spec.outputFiles);
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

  /** End of a kept pod: its svc/ended-at annotation, else the last container end it reports. */
  function endedAt(pod: V1Pod): number | null {
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

  async function removeKept(olderThan: Date): Promise<number> {
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

  return { kind: 'cluster', run, removeKept };
}
