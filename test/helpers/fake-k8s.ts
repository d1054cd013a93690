// A FAKE Kubernetes API server for the cluster runner tests (no Kubernetes can run on these
// machines). It serves just the endpoints the runner calls, records every request so the tests
// can assert the bodies, applies a few of the API server's validations (names, label values,
// namespace of the body), and plays a tiny kubelet: the containers of a created pod run as local
// processes (`/bin/sh` is the host's sh, or busybox when /bin/busybox exists), with the pod's
// volumes mapped to temporary folders:
//   - emptyDir volumes -> fresh folders; secret volumes -> folders holding the Secret's items;
//   - an env value or workingDir equal to a mount path is rewritten to the folder behind it;
//   - init containers run to completion in order, `restartPolicy: Always` ones are sidecars
//     started before the main containers and sent SIGTERM once those ended;
//   - stdout and stderr of a container form its log, each chunk stamped with one RFC 3339 nano
//     timestamp (as a container runtime does), served with follow, timestamps and sinceTime;
//   - a container without a command runs the behaviour's `entrypoint` (the image's); a running
//     pod gets its own loopback address as status.podIP (127.0.0.2, .3, ...), and an env value of
//     0.0.0.0 (bind everywhere) becomes that address: pods share the host, so this stands in for
//     each pod's own network namespace and two pods on one port never meet;
//   - DELETE with gracePeriodSeconds sends SIGTERM, then SIGKILL after the grace period, and
//     removes the pod once its processes ended; activeDeadlineSeconds fails the pod with reason
//     DeadlineExceeded.
import http from 'node:http';
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { KubeConfig } from '@kubernetes/client-node';

/** A request's body as the API server would read it: JSON when it parses, else the raw text. */
export async function readBody(req: http.IncomingMessage): Promise<any> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const raw = Buffer.concat(chunks).toString();
  try { return raw ? JSON.parse(raw) : undefined; } catch { return raw; }
}

export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  contentType: string;
  body: any;
}

export interface PodBehaviour {
  /** `run` (default): run the containers; `imagePullError`: the main image never pulls. */
  mode?: 'run' | 'imagePullError';
  /** End the first follow connection of the main log cleanly after this many lines. */
  dropFirstFollowAfterLines?: number;
  /** Replace the command of the first init container: it prints to stderr and exits with this code. */
  failFirstInitWith?: number;
  /** The image's entrypoint, run for a container that names no command (an app pod's image). */
  entrypoint?: string[];
}

interface LogEntry { ts: string; tsMs: number; text: string }

interface FakeContainer {
  name: string;
  log: LogEntry[];
  partial: string;
  proc?: ChildProcess;
  started: boolean;
  ended: boolean;
  followers: Set<(e: LogEntry | null) => void>;
}

interface FakePod {
  obj: any;
  containers: Map<string, FakeContainer>;
  dir?: string;
  behaviour: PodBehaviour;
  /** Its own loopback address (see the header). */
  ip: string;
  followConnections: number;
  deadlineTimer?: NodeJS.Timeout;
  killTimer?: NodeJS.Timeout;
}

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$/;

let lastNs = 0n;
/** RFC 3339 with nanoseconds, strictly increasing, trailing zeros trimmed as Go does. */
function nanoTimestamp(): { ts: string; ms: number } {
  let ns = BigInt(Date.now()) * 1_000_000n + (process.hrtime.bigint() % 1_000_000n);
  if (ns <= lastNs) ns = lastNs + 1n;
  lastNs = ns;
  const ms = Number(ns / 1_000_000n);
  const base = new Date(ms).toISOString().slice(0, 19);
  const frac = (ns % 1_000_000_000n).toString().padStart(9, '0').replace(/0+$/, '');
  return { ts: `${base}${frac ? '.' + frac : ''}Z`, ms };
}

/** A folder with busybox applet links, or null to use the host's tools. */
function busyboxPath(): string | null {
  if (!existsSync('/bin/busybox')) return null;
  const dir = mkdtempSync(join(tmpdir(), 'fake-k8s-bin-'));
  for (const applet of execFileSync('/bin/busybox', ['--list']).toString().trim().split('\n')) {
    try { symlinkSync('/bin/busybox', join(dir, applet)); } catch { /* duplicate */ }
  }
  return dir;
}

export class FakeKubernetes {
  readonly requests: RecordedRequest[] = [];
  readonly pods = new Map<string, FakePod>();
  readonly secrets = new Map<string, any>();
  /** Deleted pods, in order, with the grace period asked. */
  readonly deletions: Array<{ name: string; gracePeriodSeconds: number | undefined }> = [];
  behaviour: (pod: any) => PodBehaviour = () => ({});
  port = 0;
  private podCount = 0;
  private server = http.createServer((req, res) => void this.handle(req, res));
  private readonly binDir = busyboxPath();
  private readonly shell = this.binDir ? join(this.binDir, 'sh') : '/bin/sh';
  private readonly toolPath = this.binDir ?? (process.env.PATH || '/usr/bin:/bin');

  async start(): Promise<this> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.port = (this.server.address() as { port: number }).port;
    return this;
  }

  get url(): string { return `http://127.0.0.1:${this.port}`; }

  kubeConfig(): KubeConfig {
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 't', server: this.url, skipTLSVerify: true }],
      users: [{ name: 'u', token: 't' }],
      contexts: [{ name: 'c', cluster: 't', user: 'u' }],
      currentContext: 'c',
    });
    return kc;
  }

  async close(): Promise<void> {
    for (const pod of this.pods.values()) this.killAll(pod, 'SIGKILL');
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
    for (const pod of this.pods.values()) if (pod.dir) rmSync(pod.dir, { recursive: true, force: true });
    if (this.binDir) rmSync(this.binDir, { recursive: true, force: true });
  }

  /** Requests matching a method and a path pattern. */
  find(method: string, path: RegExp): RecordedRequest[] {
    return this.requests.filter((r) => r.method === method && path.test(r.path));
  }

  // ------------------------------------------------------------------------------- HTTP

  private send(res: http.ServerResponse, code: number, body: unknown): void {
    res.writeHead(code, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  }

  private status(res: http.ServerResponse, code: number, reason: string, message: string): void {
    this.send(res, code, { kind: 'Status', apiVersion: 'v1', status: 'Failure', message, reason, code });
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://x');
    const body = await readBody(req);
    const rec: RecordedRequest = {
      method: req.method ?? 'GET',
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      contentType: String(req.headers['content-type'] ?? ''),
      body,
    };
    this.requests.push(rec);
    if (req.headers.authorization !== 'Bearer t') return this.status(res, 401, 'Unauthorized', 'Unauthorized');

    const m = /^\/api\/v1\/namespaces\/([^/]+)\/(pods|secrets)(?:\/([^/]+))?(?:\/(log))?$/.exec(url.pathname);
    if (!m) return this.status(res, 404, 'NotFound', `no route ${req.method} ${url.pathname}`);
    const [, ns, kind, name, sub] = m as unknown as [string, string, string, string | undefined, string | undefined];
    const key = `${ns}/${name}`;
    try {
      if (kind === 'secrets') return this.handleSecret(req.method!, ns, name, key, rec, res);
      if (sub === 'log') return this.handleLog(key, name!, url.searchParams, req, res);
      return this.handlePod(req.method!, ns, name, key, rec, url.searchParams, res);
    } catch (err) {
      return this.status(res, 500, 'InternalError', String(err));
    }
  }

  private handleSecret(method: string, ns: string, name: string | undefined, key: string, rec: RecordedRequest, res: http.ServerResponse): void {
    if (method === 'POST' && !name) {
      const b = rec.body;
      if (b?.metadata?.namespace && b.metadata.namespace !== ns) return this.status(res, 400, 'BadRequest', 'the namespace of the object does not match the namespace on the request');
      if (!b?.metadata?.name) return this.status(res, 422, 'Invalid', 'metadata.name: Required value');
      const k = `${ns}/${b.metadata.name}`;
      if (this.secrets.has(k)) return this.status(res, 409, 'AlreadyExists', `secrets "${b.metadata.name}" already exists`);
      const obj = { ...b, metadata: { ...b.metadata, namespace: ns, uid: randomUUID() } };
      this.secrets.set(k, obj);
      return this.send(res, 201, obj);
    }
    const obj = this.secrets.get(key);
    if (!obj) return this.status(res, 404, 'NotFound', `secrets "${name}" not found`);
    if (method === 'GET') return this.send(res, 200, obj);
    if (method === 'PATCH') {
      if (!rec.contentType.startsWith('application/merge-patch+json')) return this.status(res, 415, 'UnsupportedMediaType', `fake supports merge patches only, got ${rec.contentType}`);
      mergePatch(obj, rec.body);
      return this.send(res, 200, obj);
    }
    if (method === 'DELETE') {
      this.secrets.delete(key);
      return this.send(res, 200, { kind: 'Status', status: 'Success' });
    }
    return this.status(res, 405, 'MethodNotAllowed', method);
  }

  private handlePod(method: string, ns: string, name: string | undefined, key: string, rec: RecordedRequest, q: URLSearchParams, res: http.ServerResponse): void {
    if (!name && method === 'POST') return this.createPod(ns, rec.body, res);
    if (!name && method === 'GET') {
      const selector = (q.get('labelSelector') ?? '').split(',').filter(Boolean).map((s) => s.split('='));
      const items = [...this.pods.entries()]
        .filter(([k]) => k.startsWith(`${ns}/`))
        .map(([, p]) => p.obj)
        .filter((o) => selector.every(([k, v]) => o.metadata.labels?.[k!] === v));
      return this.send(res, 200, { kind: 'PodList', apiVersion: 'v1', metadata: {}, items });
    }
    const pod = this.pods.get(key);
    if (!pod) return this.status(res, 404, 'NotFound', `pods "${name}" not found`);
    if (method === 'GET') return this.send(res, 200, pod.obj);
    if (method === 'PATCH') {
      if (!rec.contentType.startsWith('application/merge-patch+json')) return this.status(res, 415, 'UnsupportedMediaType', `fake supports merge patches only, got ${rec.contentType}`);
      mergePatch(pod.obj, rec.body);
      return this.send(res, 200, pod.obj);
    }
    if (method === 'DELETE') {
      const g = q.has('gracePeriodSeconds') ? Number(q.get('gracePeriodSeconds')) : undefined;
      this.deletions.push({ name: name!, gracePeriodSeconds: g });
      this.deletePod(key, pod, g ?? pod.obj.spec.terminationGracePeriodSeconds ?? 30);
      return this.send(res, 200, pod.obj);
    }
    return this.status(res, 405, 'MethodNotAllowed', method);
  }

  private handleLog(key: string, name: string, q: URLSearchParams, req: http.IncomingMessage, res: http.ServerResponse): void {
    const pod = this.pods.get(key);
    if (!pod) return this.status(res, 404, 'NotFound', `pods "${name}" not found`);
    const cname = q.get('container') ?? '';
    const c = pod.containers.get(cname);
    if (!c) return this.status(res, 400, 'BadRequest', `container ${cname} is not valid for pod ${name}`);
    if (!c.started) return this.status(res, 400, 'BadRequest', `container "${cname}" in pod "${name}" is waiting to start: PodInitializing`);
    const ts = q.get('timestamps') === 'true';
    const follow = q.get('follow') === 'true';
    const since = q.get('sinceTime') ? Date.parse(q.get('sinceTime')!) : -Infinity;
    const fmt = (e: LogEntry) => (ts ? `${e.ts} ${e.text}` : e.text);
    res.writeHead(200, { 'content-type': 'text/plain' });
    let entries = c.log.filter((e) => e.tsMs >= since);
    if (q.get('tailLines')) entries = entries.slice(-Number(q.get('tailLines')));
    if (!follow) {
      res.end(entries.map(fmt).join(''));
      return;
    }
    pod.followConnections++;
    const dropAfter = pod.followConnections === 1 && cname === 'main' ? pod.behaviour.dropFirstFollowAfterLines : undefined;
    let sent = 0;
    const write = (e: LogEntry): boolean => {
      res.write(fmt(e));
      sent += e.text.split('\n').length - 1;
      if (dropAfter !== undefined && sent >= dropAfter) { res.end(); return false; }
      return true;
    };
    for (const e of entries) if (!write(e)) return;
    if (c.ended) { res.end(); return; }
    const listener = (e: LogEntry | null) => {
      if (e === null) { c.followers.delete(listener); res.end(); return; }
      if (!write(e)) c.followers.delete(listener);
    };
    c.followers.add(listener);
    req.on('close', () => c.followers.delete(listener));
  }

  // ------------------------------------------------------------------------------- pods

  private createPod(ns: string, b: any, res: http.ServerResponse): void {
    const name = b?.metadata?.name;
    if (b?.metadata?.namespace && b.metadata.namespace !== ns) return this.status(res, 400, 'BadRequest', 'the namespace of the object does not match the namespace on the request');
    if (typeof name !== 'string' || !DNS1123_LABEL.test(name)) return this.status(res, 422, 'Invalid', `metadata.name: Invalid value: ${JSON.stringify(name)}`);
    for (const [k, v] of Object.entries(b.metadata.labels ?? {})) {
      if (typeof v !== 'string' || !LABEL_VALUE.test(v)) return this.status(res, 422, 'Invalid', `metadata.labels: Invalid value: ${JSON.stringify(v)} of ${k}`);
    }
    const all = [...(b.spec?.initContainers ?? []), ...(b.spec?.containers ?? [])];
    if (!b.spec?.containers?.length) return this.status(res, 422, 'Invalid', 'spec.containers: Required value');
    for (const c of all) {
      if (!DNS1123_LABEL.test(c.name ?? '')) return this.status(res, 422, 'Invalid', `container name ${c.name}`);
      for (const vm of c.volumeMounts ?? []) {
        if (!(b.spec.volumes ?? []).some((v: any) => v.name === vm.name)) return this.status(res, 422, 'Invalid', `volumeMounts: Not found: ${vm.name}`);
      }
    }
    const key = `${ns}/${name}`;
    if (this.pods.has(key)) return this.status(res, 409, 'AlreadyExists', `pods "${name}" already exists`);
    const obj = structuredClone(b);
    obj.metadata = { ...obj.metadata, namespace: ns, uid: randomUUID(), creationTimestamp: new Date().toISOString() };
    obj.status = {
      phase: 'Pending',
      startTime: new Date().toISOString(),
      containerStatuses: (obj.spec.containers as any[]).map((c) => ({ name: c.name, image: c.image, ready: false, restartCount: 0, state: { waiting: { reason: 'PodInitializing' } } })),
      initContainerStatuses: (obj.spec.initContainers ?? []).map((c: any) => ({ name: c.name, image: c.image, ready: false, restartCount: 0, state: { waiting: { reason: 'PodInitializing' } } })),
    };
    const pod: FakePod = {
      obj,
      containers: new Map(all.map((c: any) => [c.name, { name: c.name, log: [], partial: '', started: false, ended: false, followers: new Set() }])),
      behaviour: this.behaviour(obj),
      ip: `127.0.${Math.floor((this.podCount + 2) / 254)}.${((this.podCount++ + 2) % 254) + 1}`,
      followConnections: 0,
    };
    this.pods.set(key, pod);
    this.send(res, 201, obj);
    setTimeout(() => void this.kubelet(key, pod).catch((err) => { pod.obj.status.phase = 'Failed'; pod.obj.status.message = String(err); }), 30);
  }

  private setState(pod: FakePod, name: string, state: any): void {
    const st = [...pod.obj.status.containerStatuses, ...pod.obj.status.initContainerStatuses].find((s: any) => s.name === name);
    st.state = state;
  }

  private async kubelet(key: string, pod: FakePod): Promise<void> {
    const spec = pod.obj.spec;
    const main = spec.containers[0];
    if (pod.behaviour.mode === 'imagePullError') {
      this.setState(pod, main.name, { waiting: { reason: 'ErrImagePull', message: `failed to pull image "${main.image}": not found` } });
      setTimeout(() => {
        if (this.pods.get(key) === pod) this.setState(pod, main.name, { waiting: { reason: 'ImagePullBackOff', message: `Back-off pulling image "${main.image}"` } });
      }, 200);
      return;
    }
    // volumes
    pod.dir = mkdtempSync(join(tmpdir(), `fake-pod-${pod.obj.metadata.name}-`));
    const volumeDirs = new Map<string, string>();
    for (const v of spec.volumes ?? []) {
      const d = join(pod.dir, 'volumes', v.name);
      mkdirSync(d, { recursive: true });
      volumeDirs.set(v.name, d);
      if (v.secret) {
        const secret = this.secrets.get(`${pod.obj.metadata.namespace}/${v.secret.secretName}`);
        if (!secret) throw new Error(`secret ${v.secret.secretName} not found`);
        const items: Array<{ key: string; path: string }> = v.secret.items ?? Object.keys(secret.data ?? {}).map((k) => ({ key: k, path: k }));
        for (const it of items) {
          const file = join(d, it.path);
          mkdirSync(dirname(file), { recursive: true });
          writeFileSync(file, Buffer.from(secret.data[it.key], 'base64'));
        }
      }
    }
    if (spec.activeDeadlineSeconds) {
      pod.deadlineTimer = setTimeout(() => {
        if (this.pods.get(key) !== pod || isTerminal(pod)) return;
        pod.obj.status.reason = 'DeadlineExceeded';
        pod.obj.status.phase = 'Failed';
        this.killAll(pod, 'SIGKILL');
      }, spec.activeDeadlineSeconds * 1000);
    }
    const sidecars: Array<Promise<number | null>> = [];
    for (const [i, c0] of (spec.initContainers ?? []).entries()) {
      if (this.pods.get(key) !== pod || pod.obj.metadata.deletionTimestamp) return;
      const fail = i === 0 ? pod.behaviour.failFirstInitWith : undefined;
      const c = fail === undefined ? c0 : { ...c0, command: ['/bin/sh', '-c', `echo "cat: /svc/in/x: Permission denied" >&2; exit ${fail}`] };
      const done = this.runContainer(pod, c, volumeDirs);
      if (c.restartPolicy === 'Always') { sidecars.push(done); continue; }
      const code = await done;
      if (code !== 0) {
        pod.obj.status.phase = 'Failed';
        pod.obj.status.reason = 'InitError';
        return;
      }
    }
    if (this.pods.get(key) !== pod || pod.obj.metadata.deletionTimestamp) return;
    pod.obj.status.phase = 'Running';
    pod.obj.status.podIP = pod.ip;
    const code = await this.runContainer(pod, main, volumeDirs);
    // main ended: the kubelet stops the sidecars, which then end on their own
    for (const c of spec.initContainers ?? []) {
      if (c.restartPolicy === 'Always') pod.containers.get(c.name)?.proc?.kill('SIGTERM');
    }
    await Promise.all(sidecars);
    if (isTerminal(pod)) return;
    if (!pod.obj.metadata.deletionTimestamp) pod.obj.status.phase = code === 0 ? 'Succeeded' : 'Failed';
  }

  private runContainer(pod: FakePod, c: any, volumeDirs: Map<string, string>): Promise<number | null> {
    const mounts = new Map<string, string>();
    for (const vm of c.volumeMounts ?? []) mounts.set(vm.mountPath, volumeDirs.get(vm.name)!);
    const mapPath = (v: string) => mounts.get(v) ?? v;
    const env: Record<string, string> = { PATH: this.toolPath, HOME: '/tmp' };
    for (const e of c.env ?? []) env[e.name] = e.value === '0.0.0.0' ? pod.ip : mapPath(e.value ?? '');
    const argv: string[] = [...(c.command ?? pod.behaviour.entrypoint ?? []), ...(c.args ?? [])];
    if (argv[0] === '/bin/sh') argv[0] = this.shell;
    const cwd = c.workingDir ? mapPath(c.workingDir) : (volumeDirs.values().next().value ?? tmpdir());
    const fc = pod.containers.get(c.name)!;
    // its own process group: when the first process ends, the whole "container" goes with it
    const proc = spawn(argv[0]!, argv.slice(1), { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    proc.on('exit', () => { try { process.kill(-proc.pid!, 'SIGKILL'); } catch { /* gone */ } });
    fc.proc = proc;
    fc.started = true;
    this.setState(pod, c.name, { running: { startedAt: new Date().toISOString() } });
    const onData = (chunk: Buffer) => {
      // one timestamp per chunk read, as a container runtime stamps what it reads
      const { ts, ms } = nanoTimestamp();
      const text = fc.partial + chunk.toString();
      const cut = text.lastIndexOf('\n');
      fc.partial = text.slice(cut + 1);
      if (cut < 0) return;
      for (const line of text.slice(0, cut + 1).split(/(?<=\n)/)) {
        const e = { ts, tsMs: ms, text: line };
        fc.log.push(e);
        for (const f of [...fc.followers]) f(e);
      }
    };
    proc.stdout!.on('data', onData);
    proc.stderr!.on('data', onData);
    return new Promise((resolve) => {
      proc.on('error', () => resolve(127));
      proc.on('close', (code, signal) => {
        if (fc.partial) {
          const { ts, ms } = nanoTimestamp();
          const e = { ts, tsMs: ms, text: fc.partial };
          fc.partial = '';
          fc.log.push(e);
          for (const f of [...fc.followers]) f(e);
        }
        fc.ended = true;
        for (const f of [...fc.followers]) f(null);
        const exitCode = code ?? (signal === 'SIGKILL' ? 137 : signal === 'SIGTERM' ? 143 : 128);
        this.setState(pod, c.name, {
          terminated: { exitCode, reason: exitCode === 0 ? 'Completed' : 'Error', finishedAt: new Date().toISOString(), startedAt: new Date().toISOString() },
        });
        resolve(exitCode);
      });
    });
  }

  private killAll(pod: FakePod, signal: NodeJS.Signals): void {
    for (const c of pod.containers.values()) {
      if (!c.proc || c.ended) continue;
      try { process.kill(signal === 'SIGKILL' ? -c.proc.pid! : c.proc.pid!, signal); } catch { /* gone */ }
    }
  }

  private deletePod(key: string, pod: FakePod, grace: number): void {
    if (pod.obj.metadata.deletionTimestamp) return;
    pod.obj.metadata.deletionTimestamp = new Date().toISOString();
    pod.obj.metadata.deletionGracePeriodSeconds = grace;
    const running = () => [...pod.containers.values()].filter((c) => c.proc && !c.ended);
    const finish = () => {
      clearTimeout(pod.deadlineTimer);
      clearTimeout(pod.killTimer);
      if (this.pods.get(key) === pod) this.pods.delete(key);
      if (pod.dir) rmSync(pod.dir, { recursive: true, force: true });
      for (const c of pod.containers.values()) for (const f of [...c.followers]) f(null);
    };
    const live = running();
    if (live.length === 0) { finish(); return; }
    this.killAll(pod, 'SIGTERM');
    pod.killTimer = setTimeout(() => this.killAll(pod, 'SIGKILL'), grace * 1000);
    let left = live.length;
    for (const c of live) c.proc!.on('close', () => { if (--left === 0) setTimeout(finish, 20); });
  }
}

function isTerminal(pod: FakePod): boolean {
  return pod.obj.status.phase === 'Succeeded' || pod.obj.status.phase === 'Failed';
}

function mergePatch(target: any, patch: any): void {
  for (const [k, v] of Object.entries(patch ?? {})) {
    if (v === null) delete target[k];
    else if (typeof v === 'object' && !Array.isArray(v) && typeof target[k] === 'object' && target[k] !== null && !Array.isArray(target[k])) mergePatch(target[k], v);
    else target[k] = structuredClone(v);
  }
}

export async function startFakeKubernetes(): Promise<FakeKubernetes> {
  return new FakeKubernetes().start();
}
