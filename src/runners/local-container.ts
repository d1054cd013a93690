// `local_container` runner (development only): one container per task-run attempt on a
// Docker-API engine (Docker, or podman's `podman system service`) through dockerode.
//
// Life of an attempt: make sure the image is present -> create the container (labels below) ->
// put the input files in with putArchive -> start -> follow its logs (stdout and stderr
// demultiplexed, split into lines: container-logs.ts) -> wait; timeoutMs and the abort signal stop it with
// `t = killGraceSecs` -> collect the output files with getArchive -> remove it unless the spec
// says delete:false. The container is removed on every error path.
import { posix } from 'node:path';
import Docker from 'dockerode';
import * as tar from 'tar-stream';
import { readTarFiles } from './output-files.js';
import { followContainerLogs, type LogFollower } from './container-logs.js';
import type { Logger } from 'pino';
import {
  DEFAULT_KILL_GRACE_SECS,
  RUNNER_LABELS,
  RunnerSpecError,
  matchesAnyOutput,
  normaliseRelativePath,
  type ContainerRunResult,
  type ContainerRunner,
  type ContainerTaskSpec,
  type RunCallbacks,
} from './types.js';

export interface LocalContainerRunnerOptions {
  /** Engine address: `unix:///run/svc-podman.sock`, `tcp://host:port` or `http://host:port`. */
  host: string;
  /** Value of the `svc.project` label; removeKept only touches containers of this project. */
  project?: string;
  log?: Logger;
  clock?: { now(): Date };
  /** Longest wait for a pull of a missing image (default 60 s). */
  pullTimeoutMs?: number;
}

export interface LocalContainerRunner extends ContainerRunner {
  readonly kind: 'local_container';
  /** The dockerode client (tests list containers through it). */
  readonly docker: Docker;
}

/** Parses `unix://`, `tcp://` and `http://` engine addresses into dockerode options. */
export function dockerOptionsFromHost(host: string): Docker.DockerOptions {
  if (host.startsWith('unix://')) {
    const socketPath = host.slice('unix://'.length);
    if (!socketPath.startsWith('/')) throw new Error(`engine host ${host}: unix:// needs an absolute socket path`);
    return { socketPath };
  }
  const m = /^(tcp|http):\/\/([^/:]+|\[[^\]]+\])(?::(\d+))?\/?$/.exec(host);
  if (!m) throw new Error(`engine host ${JSON.stringify(host)} must be unix:///path, tcp://host:port or http://host:port`);
  return { protocol: 'http', host: m[2]!.replace(/^\[|\]$/g, ''), port: m[3] ? Number(m[3]) : 2375 };
}

/** Container names: [a-zA-Z0-9][a-zA-Z0-9_.-]*. */
function containerName(name: string): string {
  const s = name.replace(/[^a-zA-Z0-9_.-]/g, '-').replace(/^[^a-zA-Z0-9]+/, '');
  return (s || 'svc-task').slice(0, 200);
}

function statusCode(err: unknown): number | undefined {
  const c = (err as { statusCode?: unknown } | null)?.statusCode;
  return typeof c === 'number' ? c : undefined;
}

function oneLine(err: unknown): string {
  const raw = (err as { json?: { message?: string }; message?: string } | null);
  const msg = raw?.json?.message ?? raw?.message ?? String(err);
  return String(msg).replace(/\s+/g, ' ').trim();
}

/** Builds an in-memory tar placing `files` under `dir` (absolute), with the directory chain. */
export async function buildInputTar(dir: string, files: Record<string, Uint8Array>): Promise<Buffer> {
  const pack = tar.pack();
  const chunks: Buffer[] = [];
  const done = new Promise<Buffer>((resolve, reject) => {
    pack.on('data', (c: unknown) => { chunks.push(Buffer.from(c as Uint8Array)); });
    pack.on('end', () => resolve(Buffer.concat(chunks)));
    pack.on('error', reject);
  });
  const root = posix.normalize(dir).replace(/^\/+/, '').replace(/\/+$/, '');
  const dirs = new Set<string>();
  const addDir = (d: string) => {
    if (d === '' || d === '.' || dirs.has(d)) return;
    addDir(posix.dirname(d));
    dirs.add(d);
    // world-writable: the image may run as any user and must be able to write its outputs here
    pack.entry({ name: `${d}/`, type: 'directory', mode: 0o777, mtime: new Date() });
  };
  addDir(root);
  for (const [rel, data] of Object.entries(files)) {
    const name = root === '' ? rel : `${root}/${rel}`;
    addDir(posix.dirname(name));
    pack.entry({ name, type: 'file', mode: 0o666, size: data.byteLength, mtime: new Date() }, Buffer.from(data.buffer, data.byteOffset, data.byteLength));
  }
  pack.finalize();
  return done;
}

export { readTarFiles } from './output-files.js';

/** Makes sure `image` is on the engine: inspect, else pull (bounded by pullTimeoutMs) and inspect again. */
export async function ensureImagePresent(docker: Docker, image: string, opts: { log?: Logger; pullTimeoutMs: number }): Promise<void> {
  const { log, pullTimeoutMs } = opts;
  try {
    await docker.getImage(image).inspect();
    return;
  } catch (err) {
    if (statusCode(err) !== 404) throw new Error(`image ${image}: the container engine could not inspect it: ${oneLine(err)}`);
  }
  log?.info({ image }, 'image not present on the container engine; pulling it');
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      new Promise<void>((resolve, reject) => {
        docker.pull(image, {}, (err: unknown, stream?: NodeJS.ReadableStream) => {
          if (err || !stream) { reject(err ?? new Error('no pull stream')); return; }
          docker.modem.followProgress(stream, (e: unknown, events: Array<{ error?: string; errorDetail?: { message?: string } }>) => {
            // the engine reports a failed pull as an `error` event inside a 200 stream
            const failed = (events ?? []).find((ev) => ev && (ev.error || ev.errorDetail?.message));
            if (e) reject(e);
            else if (failed) reject(new Error(failed.errorDetail?.message ?? failed.error));
            else resolve();
          });
        });
      }),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${pullTimeoutMs} ms`)), pullTimeoutMs);
      }),
    ]);
  } catch (err) {
    throw new Error(`image ${image} is not present on the container engine and pulling it failed: ${oneLine(err)}`);
  } finally {
    clearTimeout(timer);
  }
  // some engines end the pull stream without an error event although nothing was pulled
  try {
    await docker.getImage(image).inspect();
  } catch (err) {
    throw new Error(`image ${image} is not present on the container engine and pulling it failed: ${oneLine(err)}`);
  }
}

export function createLocalContainerRunner(opts: LocalContainerRunnerOptions): LocalContainerRunner {
  const docker = new Docker(dockerOptionsFromHost(opts.host));
  const log = opts.log;
  const clock = opts.clock ?? { now: () => new Date() };
  const pullTimeoutMs = opts.pullTimeoutMs ?? 60_000;

  const ensureImage = (image: string) => ensureImagePresent(docker, image, { log, pullTimeoutMs });

  async function createContainer(spec: ContainerTaskSpec, labels: Record<string, string>): Promise<Docker.Container> {
    const name = containerName(spec.name);
    const create = () =>
      docker.createContainer({
        name,
        Image: spec.image,
        // `command` is the whole argv, as a pod's `command`: it replaces the image entrypoint and cmd
        Entrypoint: spec.command,
        Cmd: [],
        Env: Object.entries(spec.env).map(([k, v]) => `${k}=${v}`),
        WorkingDir: spec.workingDir,
        Labels: labels,
        Tty: false,
        OpenStdin: false,
        AttachStdin: false,
        AttachStdout: true,
        AttachStderr: true,
        HostConfig: { AutoRemove: false },
      });
    try {
      return await create();
    } catch (err) {
      if (statusCode(err) !== 409) throw err;
      // a leftover of the same attempt (a worker died mid-run): remove it when it is ours
      const old = docker.getContainer(name);
      const info = await old.inspect();
      const l = info.Config?.Labels ?? {};
      if (l[RUNNER_LABELS.runner] !== 'local_container' || (opts.project && l[RUNNER_LABELS.project] !== opts.project)) {
        throw new Error(`container name ${name} is taken by a container this runner does not own`);
      }
      log?.warn({ container: name }, 'removing a leftover container of the same attempt');
      await old.remove({ force: true, v: true });
      return create();
    }
  }

  async function collectOutputs(container: Docker.Container, spec: ContainerTaskSpec, sink?: RunCallbacks['onOutputFile']): Promise<Record<string, Uint8Array>> {
    if (spec.outputFiles.length === 0) return {};
    const keep = matchesAnyOutput(spec.outputFiles);
    const dir = posix.normalize(spec.workingDir).replace(/\/+$/, '') || '/';
    let stream: NodeJS.ReadableStream;
    try {
      stream = await container.getArchive({ path: dir });
    } catch (err) {
      if (statusCode(err) === 404) return {};
      throw new Error(`collecting output files of ${spec.name}: ${oneLine(err)}`);
    }
    // entries are named `<basename of dir>/<relative path>` (or `./...` / `/...` for the root)
    const base = posix.basename(dir);
    return readTarFiles(stream, (entryName) => {
      let n = entryName.replace(/^\.?\/+/, '');
      if (base !== '' && (n === base || n.startsWith(`${base}/`))) n = n.slice(base.length + 1);
      else if (base !== '') return null;
      try {
        n = normaliseRelativePath(n);
      } catch {
        return null;
      }
      return keep(n) ? n : null;
    }, spec.outputLimits, sink);
  }

  async function run(spec: ContainerTaskSpec, cb: RunCallbacks): Promise<ContainerRunResult> {
    if (!spec.command.length) throw new RunnerSpecError('command must not be empty');
    if (!posix.isAbsolute(spec.workingDir)) throw new RunnerSpecError(`workingDir ${JSON.stringify(spec.workingDir)} must be absolute`);
    const inputs: Record<string, Uint8Array> = {};
    for (const [p, data] of Object.entries(spec.inputFiles)) inputs[normaliseRelativePath(p)] = data;
    if (cb.signal.aborted) return { exitCode: null, outcome: 'killed', outputFiles: {} };

    await ensureImage(spec.image);

    const labels: Record<string, string> = {
      ...spec.labels,
      [RUNNER_LABELS.runner]: 'local_container',
      [RUNNER_LABELS.attempt]: spec.name,
      [RUNNER_LABELS.kept]: spec.delete ? 'false' : 'true',
    };
    if (opts.project) labels[RUNNER_LABELS.project] = opts.project;

    const grace = Math.max(0, Math.ceil(spec.killGraceSecs ?? DEFAULT_KILL_GRACE_SECS));
    let container: Docker.Container | undefined;
    let keep = false;
    let stopReason: 'killed' | 'timeout' | null = null;
    let started = false;
    let logs: LogFollower | undefined;
    let stopping: Promise<void> | undefined;
    let timer: NodeJS.Timeout | undefined;
    const stop = () => {
      if (!container || !started || stopping) return;
      const c = container;
      log?.info({ container: spec.name, reason: stopReason, grace }, 'stopping container');
      stopping = c.stop({ t: grace }).then(
        () => undefined,
        (err: unknown) => {
          // 304: already stopped
          if (statusCode(err) !== 304) log?.warn({ container: spec.name, err: oneLine(err) }, 'stopping the container failed; killing it');
          return c.kill().then(() => undefined, () => undefined);
        },
      );
    };
    const requestStop = (reason: 'killed' | 'timeout') => {
      if (stopReason) return;
      stopReason = reason;
      stop();
    };
    const onAbort = () => requestStop('killed');

    try {
      container = await createContainer(spec, labels);
      if (Object.keys(inputs).length > 0) {
        await container.putArchive(await buildInputTar(spec.workingDir, inputs), { path: '/' });
      }
      cb.signal.addEventListener('abort', onAbort, { once: true });
      if (cb.signal.aborted) onAbort();
      if (stopReason) return { exitCode: null, outcome: stopReason, outputFiles: {} };
      if (spec.timeoutMs !== undefined) timer = setTimeout(() => requestStop('timeout'), Math.max(0, spec.timeoutMs));

      const startedAt = clock.now();
      await container.start();
      started = true;
      if (stopReason) stop();
      logs = followContainerLogs(container, cb.onLog, log);
      const waited = (await container.wait()) as { StatusCode?: number };
      clearTimeout(timer);
      cb.signal.removeEventListener('abort', onAbort);
      if (stopping) await stopping;
      // every line the container printed, also when following them failed as it ended
      await logs.finish();

      const exitCode = typeof waited.StatusCode === 'number' ? waited.StatusCode : null;
      const outcome: ContainerRunResult['outcome'] = stopReason ?? 'exited';
      const outputFiles = outcome === 'exited' ? await collectOutputs(container, spec, cb.onOutputFile) : {};
      keep = !spec.delete;
      log?.info(
        { container: spec.name, exitCode, outcome, ms: clock.now().getTime() - startedAt.getTime(), kept: keep },
        'container finished',
      );
      return { exitCode, outcome, outputFiles };
    } finally {
      clearTimeout(timer);
      cb.signal.removeEventListener('abort', onAbort);
      logs?.close();
      if (container && !keep) {
        await container.remove({ force: true, v: true }).catch((err: unknown) => {
          if (statusCode(err) !== 404) log?.error({ container: spec.name, err: oneLine(err) }, 'could not remove the container');
        });
      }
    }
  }

  async function removeKept(olderThan: Date): Promise<number> {
    const label = [`${RUNNER_LABELS.runner}=local_container`, `${RUNNER_LABELS.kept}=true`];
    if (opts.project) label.push(`${RUNNER_LABELS.project}=${opts.project}`);
    const list = await docker.listContainers({ all: true, filters: { label } });
    let removed = 0;
    for (const item of list) {
      // the engine filter is trusted, but a container of another project is never touched
      if (opts.project && item.Labels?.[RUNNER_LABELS.project] !== opts.project) continue;
      if (item.Labels?.[RUNNER_LABELS.kept] !== 'true') continue;
      const c = docker.getContainer(item.Id);
      let info: Docker.ContainerInspectInfo;
      try {
        info = await c.inspect();
      } catch (err) {
        if (statusCode(err) === 404) continue;
        throw err;
      }
      if (info.State.Running || info.State.Restarting || info.State.Paused) continue;
      const finished = Date.parse(info.State.FinishedAt);
      // a container never started reports the zero time; fall back to its creation
      const endedAt = Number.isFinite(finished) && finished > 0 ? finished : Date.parse(info.Created);
      if (!(endedAt < olderThan.getTime())) continue;
      try {
        await c.remove({ force: true, v: true });
        removed++;
        log?.info({ container: info.Name, endedAt: new Date(endedAt).toISOString() }, 'removed a kept container');
      } catch (err) {
        if (statusCode(err) !== 404) log?.warn({ container: info.Name, err: oneLine(err) }, 'could not remove a kept container');
      }
    }
    return removed;
  }

  return { kind: 'local_container', docker, run, removeKept };
}
