// The embedded engine reads a catalog table's Parquet files from local disk: svc (never SQL)
// copies each object from the store into a folder of the workspace's own, the one folder its
// DuckDB database may read besides its spill folder (docs/engines.md "The lakehouse"), so no other
// workspace's database can read them. Iceberg never rewrites a file in place, so a location names
// the same bytes for as long as it exists and a cached copy never goes stale. The cache is bounded
// in bytes across workspaces (engines.embedded_cache_bytes): the least recently used files go
// first, never one a running query holds. A query needing more than the whole budget at once is
// refused with a message naming the key; one waiting on room other workspaces' queries hold waits
// for it a while first.
import { createHash, randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Logger } from 'pino';
import { SingleFlight } from '../../util/single-flight.js';
import { QueryFailure } from '../types.js';

/** Reads an object of the store as a stream, if the workspace owns its location (else throws). */
export type OpenObject = (location: string, workspaceId: string) => Promise<{ body: NodeJS.ReadableStream; size: number } | null>;

interface Entry { workspace: string; file: string; size: number; pins: number; used: number }

/** How many objects are copied at once per query. */
const PARALLEL = 8;
/** How long a copy waits for room that other workspaces' running queries hold, before it is refused. */
export const ROOM_WAIT_MS = 10_000;

export class FileCache {
  private readonly entries = new Map<string, Entry>();
  private readonly loads = new SingleFlight<string, Entry>();
  /** Evicted files still being removed: a copy of the same location waits for it, else it could adopt a file about to go, or lose its own to the removal. */
  private readonly removing = new Map<string, Promise<void>>();
  /** Workspace folders made by this process (a mkdir per copied file was a syscall per file). */
  private readonly made = new Set<string>();
  private used = 0;
  private clock = 0;
  /** Copies waiting for room: woken when a file is let go. */
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly root: string, private readonly maxBytes: number, private readonly open: OpenObject, private readonly log: Logger) {}

  /** The folder a workspace's database may read. */
  dir(workspaceId: string): string { return path.join(this.root, workspaceId); }

  /** Bytes held (for tests and metrics). */
  get bytes(): number { return this.used; }

  /**
   * Local copies of `locations` (same order), held until `release` is called: a file a query
   * holds is never evicted under it.
   */
  async hold(workspaceId: string, locations: string[], signal?: AbortSignal): Promise<{ files: string[]; release: () => void }> {
    const held: Entry[] = [];
    const release = () => { for (const e of held.splice(0)) this.unpin(e); };
    try {
      const out: string[] = new Array(locations.length);
      let next = 0;
      const worker = async () => {
        while (next < locations.length) {
          if (signal?.aborted) throw new QueryFailure('cancelled', 'query was cancelled');
          const i = next++;
          const e = await this.entry(workspaceId, locations[i]!);
          e.pins++;
          e.used = ++this.clock;
          held.push(e);
          out[i] = e.file;
        }
      };
      await Promise.all(Array.from({ length: Math.min(PARALLEL, locations.length) }, worker));
      return { files: out, release };
    } catch (err) {
      release();
      throw err;
    }
  }

  /**
   * Starts copying files before the query knows all it reads (planning hands each manifest's
   * files over as it reads them), PARALLEL at once, each pinned once copied until `release`. A
   * copy that fails is left for the `hold` that follows to report; nothing starts after
   * `release` or once `signal` aborts.
   */
  prefetch(workspaceId: string, signal?: AbortSignal): { add: (locations: string[]) => void; release: () => void } {
    const queue: string[] = [];
    const held: Entry[] = [];
    let running = 0;
    let released = false;
    const pump = () => {
      while (running < PARALLEL && queue.length > 0 && !released && !signal?.aborted) {
        running++;
        this.entry(workspaceId, queue.shift()!).then((e) => {
          if (released) return;
          e.pins++;
          e.used = ++this.clock;
          held.push(e);
        }, () => undefined).finally(() => { running--; pump(); });
      }
    };
    return {
      add: (locations) => { queue.push(...locations); pump(); },
      release: () => { released = true; queue.length = 0; for (const e of held.splice(0)) this.unpin(e); },
    };
  }

  private entry(workspaceId: string, location: string): Promise<Entry> {
    const key = `${workspaceId}\u0000${location}`;
    const hit = this.entries.get(key);
    if (hit) return Promise.resolve(hit);
    return this.loads.run(key, () => this.copy(key, workspaceId, location));
  }

  private async copy(key: string, workspaceId: string, location: string): Promise<Entry> {
    const dir = this.dir(workspaceId);
    const file = path.join(dir, `${createHash('sha256').update(location).digest('hex')}.parquet`);
    if (!this.made.has(dir)) {
      await mkdir(dir, { recursive: true, mode: 0o700 });
      this.made.add(dir);
    }
    await this.removing.get(file);
    // A copy left by an earlier process is adopted (its name is the location's hash).
    let size = await stat(file).then((s) => s.size, () => -1);
    if (size >= 0) await this.reserve(size, workspaceId);
    else {
      const obj = await this.open(location, workspaceId);
      if (!obj) throw new QueryFailure('failed', `a file of the table is missing from the object store: ${location}`);
      size = obj.size;
      // a refusal leaves the answer unread: let its connection go
      try { await this.reserve(size, workspaceId); } catch (err) { (obj.body as NodeJS.ReadableStream & { destroy?: () => void }).destroy?.(); throw err; }
      const tmp = `${file}.${randomUUID()}.part`;
      try {
        await pipeline(obj.body, createWriteStream(tmp, { mode: 0o600 }));
        await rename(tmp, file);
      } catch (err) {
        this.used -= size;
        // the folder removed under the process: made again by the next copy
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') this.made.delete(dir);
        await rm(tmp, { force: true });
        throw err;
      }
    }
    const e: Entry = { workspace: workspaceId, file, size, pins: 0, used: ++this.clock };
    this.entries.set(key, e);
    return e;
  }

  private unpin(e: Entry): void {
    if (--e.pins === 0) for (const wake of this.waiting.splice(0)) wake();
  }

  /**
   * Counts `size` more bytes, evicting to make room first. Room that other workspaces' running
   * queries hold is waited for (up to ROOM_WAIT_MS): one workspace's long scan does not refuse
   * another's read outright. Room the workspace's own queries hold, or a file larger than the
   * budget, is refused at once (waiting on itself would never end).
   */
  private async reserve(size: number, workspaceId: string): Promise<void> {
    if (size > this.maxBytes) throw new QueryFailure('refused', `a file of ${size} bytes is larger than the embedded engine's file cache (engines.embedded_cache_bytes = ${this.maxBytes})`);
    const deadline = Date.now() + ROOM_WAIT_MS;
    for (;;) {
      if (this.makeRoom(size)) { this.used += size; return; }
      let own = 0;
      for (const e of this.entries.values()) if (e.pins > 0 && e.workspace === workspaceId) own += e.size;
      const left = deadline - Date.now();
      if (own + size > this.maxBytes || left <= 0) {
        throw new QueryFailure('refused', `the query needs more table files at once than the embedded engine's file cache holds (engines.embedded_cache_bytes = ${this.maxBytes}): filter on partition columns, or raise the key`);
      }
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          const i = this.waiting.indexOf(done);
          if (i >= 0) this.waiting.splice(i, 1);
          resolve();
        };
        const timer = setTimeout(done, Math.min(left, 1_000));
        this.waiting.push(done);
      });
    }
  }

  /** Evicts unpinned files, least recently used first, until `size` more bytes fit; whether they do. */
  private makeRoom(size: number): boolean {
    if (this.used + size <= this.maxBytes) return true;
    const victims = [...this.entries].filter(([, e]) => e.pins === 0).sort((a, b) => a[1].used - b[1].used);
    for (const [k, e] of victims) {
      if (this.used + size <= this.maxBytes) break;
      this.entries.delete(k);
      this.used -= e.size;
      const removal: Promise<void> = rm(e.file, { force: true })
        .catch((err: Error) => this.log.warn({ err: err.message }, 'removing a cached table file failed'))
        .finally(() => { if (this.removing.get(e.file) === removal) this.removing.delete(e.file); });
      this.removing.set(e.file, removal);
    }
    return this.used + size <= this.maxBytes;
  }

  /** Removes every cached file (at shutdown when the root is temporary). */
  async clear(): Promise<void> {
    this.entries.clear();
    this.made.clear();
    this.used = 0;
    await rm(this.root, { recursive: true, force: true });
  }
}
