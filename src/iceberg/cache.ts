// Decoded manifest lists and manifests, kept by location: Iceberg never rewrites a file in place
// (a change writes new files), so a location names the same content for as long as it exists.
// Least recently used first out, bounded in (estimated) bytes; concurrent misses of one location
// share one read. `manifestIO` reads through it with an injected byte reader.
import { readManifest, readManifestList, type Manifest, type ManifestFile } from './manifests.js';
import type { PartitionSpec } from './specs.js';

export class ManifestCache {
  private readonly map = new Map<string, { v: unknown; size: number }>();
  private readonly loading = new Map<string, Promise<unknown>>();
  private used = 0;
  hits = 0;
  misses = 0;

  constructor(readonly maxBytes: number) {}

  async get<T>(key: string, load: () => Promise<{ value: T; bytes: number }>): Promise<T> {
    const e = this.map.get(key);
    if (e) {
      this.map.delete(key);
      this.map.set(key, e); // most recently used last
      this.hits++;
      return e.v as T;
    }
    const running = this.loading.get(key);
    if (running) return running as Promise<T>;
    this.misses++;
    const p = load().then(({ value, bytes }) => { this.put(key, value, bytes); return value; })
      .finally(() => this.loading.delete(key));
    this.loading.set(key, p);
    return p;
  }

  private put(key: string, v: unknown, size: number): void {
    if (size > this.maxBytes) return;
    while (this.map.size > 0 && this.used + size > this.maxBytes) {
      const oldest = this.map.keys().next().value as string;
      this.used -= this.map.get(oldest)!.size;
      this.map.delete(oldest);
    }
    this.map.set(key, { v, size });
    this.used += size;
  }

  clear(): void { this.map.clear(); this.used = 0; }
  get byteSize(): number { return this.used; }
  get size(): number { return this.map.size; }
}

/** What planning reads: decoded manifest lists and manifests. */
export interface ManifestIO {
  manifestList(location: string): Promise<ManifestFile[]>;
  manifest(location: string, spec: PartitionSpec): Promise<Manifest>;
}

/** A location's bytes (the caller decides which locations it may read, and says so by throwing). */
export type ReadBytes = (location: string) => Promise<Uint8Array>;

const listBytes = (l: ManifestFile[]) => l.reduce((n, m) => n + 400 + 2 * m.path.length + (m.partitions?.length ?? 0) * 120, 200);

/** Reads manifests with `read`, through `cache` when given. */
export function manifestIO(read: ReadBytes, cache?: ManifestCache): ManifestIO {
  const listOf = async (location: string) => {
    const value = await readManifestList(await read(location), location);
    return { value, bytes: listBytes(value) };
  };
  const manifestOf = async (location: string, spec: PartitionSpec) => {
    const value = await readManifest(await read(location), location, spec);
    return { value, bytes: value.bytes };
  };
  return {
    manifestList: async (location) => (cache ? cache.get(`list\u0000${location}`, () => listOf(location)) : (await listOf(location)).value),
    manifest: async (location, spec) => (cache ? cache.get(`${spec.specId}\u0000${location}`, () => manifestOf(location, spec)) : (await manifestOf(location, spec)).value),
  };
}
