// The `subprocess` pod launcher (apps.pod.launcher = subprocess; local development only): each pod
// is apps.pod.command run as a process group in its own working directory under
// apps.pod.work_dir, listening on a free local port. docs/apps.md "Pods" lists its environment.
// It is no sandbox: the process runs as the service's user, which is why `cluster` is the
// production launcher.
import type { ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { chmod, cp, mkdir, open, readdir, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { PodHandle, PodLauncher, PodSpec } from './pods.js';

// Node's child_process when a pod is launched, not at every `svc serve` start (apps off or not).
const require = createRequire(import.meta.url);

export interface SubprocessOptions {
  command: string[];
  workDir: string;
  configDir: string;
  venvShimDir: string;
  kernelMode: string;
  callbackUrl: string;
  /** PATH the pods inherit (the service's own, by default). */
  path?: string;
}

/** A pod's working directory is named by its launch id (a UUID): nothing else may be removed. */
const POD_ID = /^[0-9a-f-]{36}$/;
/** An app's name is already bounded to this by the apps API; checked again before it names a file. */
const APP_NAME = /^[a-z0-9][a-z0-9-]{0,62}$/;

/** A free TCP port on the loopback interface (the kernel picks it; the pod binds it right after). */
async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** Makes a tree read-only for everyone (files 0444, directories 0555), deepest first. */
async function lockTree(dir: string): Promise<void> {
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) await lockTree(p);
    else if (e.isFile()) await chmod(p, 0o444);
  }
  await chmod(dir, 0o555);
}

const gone = (err: NodeJS.ErrnoException) => {
  if (err.code !== 'ENOENT') throw err;
  return null;
};

/**
 * Makes a tree writable again so it can be removed (root ignores the bits; other users do not).
 * Two stops of one pod may race (the stop-app job and a shutdown): a tree the other removed is done.
 */
async function unlockTree(dir: string): Promise<void> {
  const st = await stat(dir).catch(gone);
  if (!st?.isDirectory()) return;
  if ((await chmod(dir, 0o755).then(() => true).catch(gone)) === null) return;
  const entries = (await readdir(dir, { withFileTypes: true }).catch(gone)) ?? [];
  for (const e of entries) if (e.isDirectory()) await unlockTree(path.join(dir, e.name));
}

const alive = (pid: number) => {
  try { process.kill(pid, 0); return true; } catch { return false; }
};

export class SubprocessLauncher implements PodLauncher {
  readonly kind = 'subprocess' as const;
  /** Children this replica started, by process id: their exit is known without polling. */
  private readonly children = new Map<number, { child: ChildProcess; exit: string | null; handle: PodHandle }>();
  private closed = false;

  constructor(private readonly o: SubprocessOptions) {}

  private dirOf(handle: PodHandle): string {
    const id = String(handle.ref.id);
    if (!POD_ID.test(id)) throw new Error(`not a pod id: ${id.slice(0, 40)}`);
    return path.join(this.o.workDir, id);
  }

  async start(spec: PodSpec): Promise<PodHandle> {
    if (this.closed) throw new Error('the subprocess launcher is closed: the service is shutting down');
    if (!POD_ID.test(spec.id) || !APP_NAME.test(spec.appName)) throw new Error('pod id or app name out of shape');
    const dir = path.join(this.o.workDir, spec.id);
    const src = path.join(dir, 'src');
    await mkdir(src, { recursive: true, mode: 0o700 });
    const source = path.join(src, `${spec.appName}.py`);
    await writeFile(source, spec.source, { mode: spec.mode === 'run' ? 0o444 : 0o644 });
    const port = await freePort();
    const env: Record<string, string> = {
      // Only what the pod needs: never the service's own environment (its secrets live there).
      PATH: this.o.path ?? process.env.PATH ?? '/usr/bin:/bin',
      HOME: dir,
      LANG: 'C.UTF-8',
      SVC_APP_HOST: '127.0.0.1',
      SVC_APP_PORT: String(port),
      SVC_APP_MODE: spec.mode,
      SVC_APP_ID: spec.appId,
      SVC_APP_NAME: spec.appName,
      SVC_APP_VERSION: spec.version === null ? '' : String(spec.version),
      SVC_APP_WORKSPACE_ID: spec.workspaceId,
      SVC_APP_SOURCE: source,
      SVC_APP_SOURCE_DIR: src,
      SVC_APP_KERNEL_MODE: this.o.kernelMode,
      SVC_APP_CALLBACK_URL: this.o.callbackUrl,
    };
    if (this.o.configDir) {
      // The pod gets its own read-only copy: whatever it does, the shared directory is untouched,
      // and the copy itself is not writable by an unprivileged pod.
      const conf = path.join(dir, 'config');
      await cp(this.o.configDir, conf, { recursive: true });
      await lockTree(conf);
      env.SVC_APP_CONFIG_DIR = conf;
      env.XDG_CONFIG_HOME = conf;
    }
    if (spec.mode === 'run' && this.o.venvShimDir) {
      env.SVC_APP_VENV_SHIM_DIR = this.o.venvShimDir;
      env.PATH = `${this.o.venvShimDir}${path.delimiter}${env.PATH}`;
    }
    // The pod's output goes to pod.log in its directory (removed with the pod).
    const log = await open(path.join(dir, 'pod.log'), 'a', 0o600);
    let child: ChildProcess;
    let spawned: Promise<number>;
    try {
      child = (require('node:child_process') as typeof import('node:child_process')).spawn(this.o.command[0], this.o.command.slice(1), { cwd: dir, env, detached: true, stdio: ['ignore', log.fd, log.fd] });
      // Listened for before anything else is awaited: 'spawn' comes on the next turn.
      spawned = new Promise<number>((resolve, reject) => {
        child.once('spawn', () => resolve(child.pid!));
        child.once('error', reject);
      });
    } finally {
      await log.close();
    }
    const pid = await spawned;
    const handle = { address: `http://127.0.0.1:${port}`, ref: { pid, id: spec.id } };
    const entry = { child, exit: null as string | null, handle };
    child.once('exit', (code, signal) => { entry.exit = signal ? `signal ${signal}` : `code ${code}`; });
    child.unref();
    this.children.set(pid, entry);
    // A pod started while close() was stopping the others is stopped too.
    if (this.closed) {
      await this.stop(handle);
      throw new Error('the subprocess launcher is closed: the service is shutting down');
    }
    return handle;
  }

  /** The pods this instance started and has not stopped. */
  running(): PodHandle[] {
    return [...this.children.values()].map((c) => c.handle);
  }

  /**
   * Stops every pod this instance started and starts no more: a subprocess pod is a child of the
   * service's process and would otherwise outlive it (reparented to PID 1, unreachable and never
   * stopped). All at once, each bounded by stop() (SIGTERM, SIGKILL after 5 s).
   */
  async close(): Promise<void> {
    this.closed = true;
    const results = await Promise.allSettled(this.running().map((h) => this.stop(h)));
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  }

  failure(handle: PodHandle): string | null {
    const pid = Number(handle.ref.pid);
    const mine = this.children.get(pid);
    if (mine) return mine.exit && `the app's process exited (${mine.exit}) before it answered`;
    return alive(pid) ? null : "the app's process is gone";
  }

  async stop(handle: PodHandle): Promise<void> {
    const pid = Number(handle.ref.pid);
    const dir = this.dirOf(handle);
    if (Number.isInteger(pid) && pid > 1) {
      // The whole process group: the command may have started children of its own.
      const signal = (s: NodeJS.Signals) => { try { process.kill(-pid, s); } catch { /* already gone */ } };
      const running = () => alive(pid) && this.children.get(pid)?.exit == null;
      signal('SIGTERM');
      for (let i = 0; i < 50 && running(); i++) await new Promise((r) => setTimeout(r, 100));
      // What is left of the group (the leader, or children of its own that outlived it) is killed,
      // and the leader waited for (up to 1 s) so that nothing runs when stop() returns.
      signal('SIGKILL');
      for (let i = 0; i < 10 && running(); i++) await new Promise((r) => setTimeout(r, 100));
      this.children.delete(pid);
    }
    await unlockTree(path.join(dir, 'config'));
    await rm(dir, { recursive: true, force: true });
  }

  async deliver(handle: PodHandle, appName: string, source: string): Promise<void> {
    if (!APP_NAME.test(appName)) throw new Error('app name out of shape');
    // 'wx': an author's working copy in the pod is never overwritten by the stored draft.
    await writeFile(path.join(this.dirOf(handle), 'src', `${appName}.py`), source, { flag: 'wx' }).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'EEXIST') throw err;
    });
  }
}
