// What the embedded engine asks of the catalog to write its tables (docs/engines.md "Writes from
// SQL"): the same operations, rights and policy checks as the catalog's REST routes, for the person
// or client the statement runs for. A port: src/catalog implements it (catalog/engine-writes.ts)
// and services.ts hands it in, so the engine's statement code stays testable on its own.
import type { SnapshotChange } from '../../iceberg/writer.js';
import type { QueryRole } from '../types.js';

type Json = Record<string, unknown>;

/** Who writes: the statement's principal, as the catalog's rights and policies know people. */
export interface WriteActor {
  workspaceId: string;
  user: string;
  groups: string[];
  role: QueryRole;
}

export interface CatalogWrites {
  /** Creates table `name` in namespace `levels` (the catalog's createTable request body); false when it exists and `ifNotExists`. */
  createTable(a: WriteActor, levels: string[], request: Json, ifNotExists: boolean): Promise<boolean>;
  /** Drops the table and purges its files, as Trino's DROP TABLE does on an Iceberg REST catalog; false when missing and `ifExists`. */
  dropTable(a: WriteActor, levels: string[], name: string, ifExists: boolean): Promise<boolean>;
  /**
   * Drops a table the statement itself created (CREATE TABLE ... AS whose rows could not be
   * written), with the right that created it, while nothing was committed to it since (its
   * metadata is still at `metadataLocation`).
   */
  undoCreate(a: WriteActor, levels: string[], name: string, metadataLocation: string): Promise<void>;
  /** Refuses (403, naming the rule) unless `commit` would be allowed: checked before any file is put. */
  mayCommit(a: WriteActor, levels: string[], name: string): Promise<void>;
  /** Puts a file the statement wrote under the table's location (`data/<file>`); its `s3://` location. */
  upload(a: WriteActor, tableLocation: string, file: string, localPath: string): Promise<string>;
  /** One Iceberg commit of the files on the table's main branch (optimistic, retried on a concurrent append). */
  commit(a: WriteActor, levels: string[], name: string, change: SnapshotChange): Promise<{ snapshotId: bigint }>;
}
