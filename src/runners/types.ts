// The contract between the workflow engine (src/workflows, src/jobs) and the runners that execute
// one task-run attempt in a container: `local_container` (dockerode, development) or `cluster`
// (one Kubernetes pod per attempt). Runners know nothing of flows; they run one spec.

import type { OutputFileSink, OutputLimits } from './output-files.js';

export interface ResourceList { cpu?: string; memory?: string; ephemeral_storage?: string }
export interface Resources { request?: ResourceList; limit?: ResourceList }

export interface ContainerTaskSpec {
  /** Stable name of the attempt, e.g. `svc-<execution>-<taskRun>-<attempt>`; used for container/pod names. */
  name: string;
  image: string;
  /** argv of the main container; for a `script` task: ['/bin/sh', '-c', script]. */
  command: string[];
  env: Record<string, string>;
  /** Files placed under `workingDir` before the command starts (path relative to workingDir). */
  inputFiles: Record<string, Uint8Array>;
  /** Relative paths (or glob patterns) collected from `workingDir` after the command ends. */
  outputFiles: string[];
  workingDir: string;
  /** Kill the attempt after this long; undefined = unbounded. */
  timeoutMs?: number;
  /** taskRunner.delete: false keeps the container/pod after the run (removed by retention later). */
  delete: boolean;
  resources?: Resources;
  /** Labels stamped on the container/pod, e.g. svc.execution, svc.task-run, svc.workspace. */
  labels: Record<string, string>;
  /** Seconds between SIGTERM and SIGKILL when stopping (plugin_host.kill_grace_s for plugin tasks). */
  killGraceSecs?: number;
  /** Caps on the output files (workflow.storage): collection stops as soon as one is passed. */
  outputLimits?: OutputLimits;
}

export type LogStream = 'stdout' | 'stderr';

export interface RunCallbacks {
  /** One line of output, without its trailing newline, in order. */
  onLog(line: string, stream: LogStream): void;
  /** Aborted when the task run is killed or times out: the runner stops the container and resolves. */
  signal: AbortSignal;
  /**
   * When set, each output file is handed here as a stream while it is read (consume it, e.g. into
   * an object-store upload) and ContainerRunResult.outputFiles stays empty: nothing is held whole.
   */
  onOutputFile?: OutputFileSink;
}

export interface ContainerRunResult {
  exitCode: number | null;
  /** 'exited' normally; 'killed' when the signal aborted it; 'timeout' after timeoutMs. */
  outcome: 'exited' | 'killed' | 'timeout';
  outputFiles: Record<string, Uint8Array>;
}

export interface ContainerRunner {
  readonly kind: 'local_container' | 'cluster';
  run(spec: ContainerTaskSpec, cb: RunCallbacks): Promise<ContainerRunResult>;
  /** Removes containers/pods kept with delete:false whose run ended before `olderThan`; returns how many. */
  removeKept(olderThan: Date): Promise<number>;
}

// ---------------------------------------------------------------------------------------------
// Helpers shared by the runners (compatible extension of the contract: nothing above changed).
// ---------------------------------------------------------------------------------------------

/** Thrown for a spec a runner refuses before touching the engine (bad paths, bad image, ...). */
export class RunnerSpecError extends Error {
  override readonly name = 'RunnerSpecError';
}

/**
 * Checks a path relative to the working directory (input file names) and returns it normalised
 * (posix separators, no `./`, no empty segments). Absolute paths and `..` segments are refused.
 */
export function normaliseRelativePath(path: string): string {
  const p = path.replace(/\\/g, '/');
  if (p.startsWith('/')) throw new RunnerSpecError(`file path ${JSON.stringify(path)} must be relative to the working directory`);
  const parts = p.split('/').filter((s) => s !== '' && s !== '.');
  if (parts.length === 0) throw new RunnerSpecError(`file path ${JSON.stringify(path)} names no file`);
  if (parts.some((s) => s === '..')) throw new RunnerSpecError(`file path ${JSON.stringify(path)} must not contain '..'`);
  if (/[\0\n\r]/.test(p)) throw new RunnerSpecError(`file path ${JSON.stringify(path)} contains a NUL or line break character`);
  return parts.join('/');
}

/**
 * Compiles one `outputFiles` entry into a matcher of relative file paths (posix, as returned by
 * normaliseRelativePath). Glob syntax: `*` any characters except `/`, `**` any characters
 * including `/`, `?` one character except `/`, `[abc]`, `[a-z]`, `[!abc]`. An entry also matches
 * every file below a directory it matches (`out` collects `out/a.txt` and `out/sub/b.txt`).
 */
export function outputMatcher(pattern: string): (relPath: string) => boolean {
  let p = pattern.replace(/\\/g, '/');
  while (p.startsWith('./')) p = p.slice(2);
  p = p.replace(/\/+$/, '');
  if (p === '' || p.startsWith('/')) return () => false;
  let re = '';
  for (let i = 0; i < p.length; i++) {
    const c = p[i]!;
    if (c === '*') {
      if (p[i + 1] === '*') {
        // `**/` also matches zero directories
        if (p[i + 2] === '/') { re += '(?:.*/)?'; i += 2; } else { re += '.*'; i += 1; }
      } else re += '[^/]*';
    } else if (c === '?') re += '[^/]';
    else if (c === '[') {
      const end = p.indexOf(']', i + 2);
      if (end < 0) { re += '\\['; continue; }
      let body = p.slice(i + 1, end);
      const negate = body.startsWith('!') || body.startsWith('^');
      if (negate) body = body.slice(1);
      body = body.replace(/[\\\]^]/g, (m) => '\\' + m);
      re += negate ? `[^/${body}]` : `[${body}]`;
      i = end;
    } else re += c.replace(/[.+^${}()|\\/]/g, (m) => '\\' + m);
  }
  const rx = new RegExp(`^${re}(?:/.*)?$`);
  return (relPath) => rx.test(relPath);
}

/** True when `relPath` is matched by at least one `outputFiles` entry. */
export function matchesAnyOutput(patterns: string[]): (relPath: string) => boolean {
  const ms = patterns.map(outputMatcher);
  return (relPath) => ms.some((m) => m(relPath));
}

/**
 * Splits a byte stream into lines (UTF-8, multi-byte characters split across chunks kept whole),
 * without the trailing `\n` or `\r\n`. `end()` flushes a last partial line.
 */
export class LineSplitter {
  private readonly decoder = new TextDecoder('utf-8');
  private pending = '';
  constructor(private readonly emit: (line: string) => void) {}

  push(chunk: Uint8Array | string): void {
    this.pending += typeof chunk === 'string' ? chunk : this.decoder.decode(chunk, { stream: true });
    let nl = this.pending.indexOf('\n');
    while (nl >= 0) {
      const line = this.pending.slice(0, nl);
      this.pending = this.pending.slice(nl + 1);
      this.emit(line.endsWith('\r') ? line.slice(0, -1) : line);
      nl = this.pending.indexOf('\n');
    }
  }

  end(): void {
    this.pending += this.decoder.decode();
    if (this.pending.length > 0) {
      const line = this.pending;
      this.pending = '';
      this.emit(line.endsWith('\r') ? line.slice(0, -1) : line);
    }
  }
}

/** Seconds between SIGTERM and SIGKILL when the spec says nothing. */
export const DEFAULT_KILL_GRACE_SECS = 10;

/** Label keys every runner stamps on its containers or pods. */
export const RUNNER_LABELS = {
  /** which runner made it: `local_container` or `cluster` */
  runner: 'svc.runner',
  /** the attempt name (ContainerTaskSpec.name) */
  attempt: 'svc.attempt',
  /** `true` when kept with taskRunner.delete false (removed by retention) */
  kept: 'svc.kept',
  /** engines.local_container.project of the local runner */
  project: 'svc.project',
} as const;
