// An Iceberg table held in memory for tests and benchmarks of the format core: its files in a Map,
// its metadata made and changed by the catalog's own metadata functions (createUpdates,
// applyUpdates, checkRequirement: the rules a real commit applies, without PostgreSQL or S3).
import { readFile } from 'node:fs/promises';
import { applyUpdates, checkRequirement, createUpdates, emptyMetadata, type TableMetadata } from '../../src/catalog/metadata.js';
import { ManifestCache, manifestIO } from '../../src/iceberg/cache.js';
import { prepareCommit, type SnapshotChange, type WriterIO } from '../../src/iceberg/writer.js';
import { parseJson, stringifyJson } from '../../src/catalog/json.js';

export class MemTable {
  readonly files = new Map<string, Uint8Array>();
  readonly cache = new ManifestCache(64 * 1024 * 1024);
  now = 1_700_000_000_000;
  reads = 0;

  constructor(public metadata: TableMetadata) {}

  static create(req: Record<string, unknown>, location = 's3://warehouse/lake/ws/ns/t'): MemTable {
    const now = 1_700_000_000_000;
    const m = applyUpdates(undefined, null, createUpdates(req, location), () => emptyMetadata(location, now), now);
    return new MemTable(m);
  }

  read = async (location: string): Promise<Uint8Array> => {
    const b = this.files.get(location);
    if (!b) throw new Error(`no such file: ${location}`);
    this.reads++;
    return b;
  };

  io(cache = true): WriterIO {
    return {
      ...manifestIO(this.read, cache ? this.cache : undefined),
      write: async (location, bytes) => { this.files.set(location, bytes); },
      now: () => (this.now += 1000),
    };
  }

  /** Commits `updates` under `requirements` as the catalog's commit does (one attempt). */
  apply(requirements: unknown[], updates: unknown[]): void {
    for (const r of requirements) checkRequirement(this.metadata, r);
    // through JSON text, as the catalog stores it: 64-bit ids become BigInt where they must
    const next = applyUpdates(this.metadata, 'mem://previous', updates, () => { throw new Error('exists'); }, this.now);
    this.metadata = parseJson(stringifyJson(next)) as TableMetadata;
  }

  /** Prepares and commits a snapshot; returns its id. */
  async commit(change: SnapshotChange): Promise<bigint> {
    const p = await prepareCommit(this.metadata, change, this.io());
    this.apply(p.requirements, p.updates);
    return p.snapshotId;
  }
}

/** The fixtures sit beside the checkout (../shared/fixtures/iceberg, see its README). */
export const FIXTURES = new URL('../../../shared/fixtures/iceberg', import.meta.url).pathname;
/** Each fixture table and its newest metadata file. */
export const FIXTURE_TABLES: Array<[string, string]> = [
  ['java/bunnies', 'v5.metadata.json'], ['spark/bunnies', 'v5.metadata.json'],
  ['athena/example', '00001-aaf0d033-d06b-43c7-be60-67f83abd4aca.metadata.json'],
];

/** A reader of a fixture table's files from its local copy (paths name the original bucket). */
export function fixtureReader(root: string): (location: string) => Promise<Uint8Array> {
  return async (location) => readFile(root + location.replace(/^s3a?:\/\/hyperparam-iceberg\/[^/]+\/[^/]+/, ''));
}
