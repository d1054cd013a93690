// The embedded engine's databases (docs/engines.md "The embedded engine"): one DuckDB database per
// workspace, opened on first use, the least recently used idle one closed beyond max_databases.
// Each is sandboxed before any query reaches it: no file system or network but its own private
// folders (enable_external_access = false with allowed_directories naming only them), no
// extension loading, its own spill folder that SQL cannot name (the statement rules refuse every
// function that reads files or shows settings), and its configuration locked, so SQL cannot lift
// its memory or thread limits.
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { DuckDBConnection, DuckDBInstance, DuckDBPreparedStatement } from '@duckdb/node-api';
import type { Logger } from 'pino';
import { QueryFailure } from './types.js';

type DuckDB = typeof import('@duckdb/node-api');
// DuckDB is a native module: loaded on the first query, never by commands that run none.
let duckdbModule: Promise<DuckDB> | undefined;
export const loadDuckDB = (): Promise<DuckDB> => (duckdbModule ??= import('@duckdb/node-api'));

export interface DatabaseOptions {
  /** Directory of one `<workspace id>.duckdb` file per workspace; '' keeps them in memory. */
  dataDir: string;
  memoryLimit: string;
  threads: number;
  maxDatabases: number;
  /** Idle connections kept per database. */
  idleConnections: number;
  /** Folders of its own a workspace's database may read besides its spill folder (its table-file cache). */
  readable?: (workspaceId: string) => string[];
}

// Idle connections are kept per database: a connection costs a thread-pool hop to open. The
// statement rules refuse everything that would leave state on a connection (SET, transactions,
// PREPARE, temporary objects), so a reused connection carries nothing over.
export interface Db { id: string; instance: DuckDBInstance; active: number; lastUsed: number; idle: DuckDBConnection[]; name: string }

/**
 * svc's own statements prepared on a connection, by text (the parser's json_serialize_sql and
 * json_deserialize_sql): a query's parse is then a bind and a run, not also the extract and
 * prepare hops through the thread pool (issue 27 point 10). They are C API statements, not SQL
 * PREPARE names, so the SQL a person sends cannot reach them; closing the connection destroys them
 * (the client tracks what it prepared), and the map forgets a connection that is gone.
 */
const ownStatements = new WeakMap<DuckDBConnection, Map<string, { statement: DuckDBPreparedStatement; busy: boolean }>>();
/** Texts kept per connection at most (the parser uses two). */
const OWN_STATEMENTS_MAX = 8;

/**
 * Runs one of svc's own one-row, one-column statements with one VARCHAR parameter on `conn`,
 * prepared once per connection and read materialized (a statement already running on it, or one
 * past the bound, is prepared for this call alone).
 */
export async function scalarOn(conn: DuckDBConnection, sql: string, arg: string): Promise<string> {
  let mine = ownStatements.get(conn);
  if (!mine) ownStatements.set(conn, (mine = new Map()));
  let kept = mine.get(sql);
  if (!kept && mine.size < OWN_STATEMENTS_MAX) mine.set(sql, (kept = { statement: await conn.prepare(sql), busy: false }));
  if (!kept || kept.busy) return String((await conn.runAndReadAll(sql, [arg])).getRows()[0]![0]);
  kept.busy = true;
  try {
    kept.statement.bindVarchar(1, arg);
    // Materialized: its one row is read at once, not by two more fetches through the thread pool.
    const result = await kept.statement.run();
    if (result.chunkCount === 0) throw new Error(`no row from ${sql}`);
    return String(result.getChunk(0).getRowValues(0)[0]);
  } finally {
    kept.busy = false;
  }
}

/** A DuckDB of svc's runs no extension: none installed, loaded or taken from the community repository. */
export const NO_EXTENSIONS = { autoinstall_known_extensions: 'false', autoload_known_extensions: 'false', allow_community_extensions: 'false' } as const;

export class Databases {
  private readonly dbs = new Map<string, Db>();
  private readonly opening = new Map<string, Promise<Db>>();
  private scratchRoot: Promise<string> | undefined;
  private closed = false;

  constructor(private readonly opts: DatabaseOptions, private readonly log: Logger) {}

  /** Workspace databases open now (for tests and metrics). */
  open(): string[] { return [...this.dbs.keys()]; }

  /** The workspace's database, counted active until `release`. */
  async acquire(workspaceId: string): Promise<Db> {
    if (this.closed) throw new QueryFailure('failed', 'the embedded engine is shutting down');
    const open = this.dbs.get(workspaceId);
    if (open) { open.active++; this.dbs.delete(workspaceId); this.dbs.set(workspaceId, open); return open; }
    let pending = this.opening.get(workspaceId);
    if (!pending) {
      pending = this.openDatabase(workspaceId).finally(() => this.opening.delete(workspaceId));
      this.opening.set(workspaceId, pending);
    }
    const db = await pending;
    db.active++;
    return db;
  }

  /** Ends a use of `db`; `conn` goes back to its idle connections unless it is not wanted. */
  release(db: Db, conn: DuckDBConnection | undefined, reusable: boolean): void {
    db.active--;
    db.lastUsed = Date.now();
    if (conn && reusable && this.dbs.get(db.id) === db && db.idle.length < this.opts.idleConnections) db.idle.push(conn);
    else this.discard(conn);
  }

  /** The private folder of a workspace's database (spill files), made on first use. */
  private async privateDir(workspaceId: string, what: string): Promise<string> {
    this.scratchRoot ??= this.opts.dataDir
      ? mkdir(path.join(this.opts.dataDir, 'private'), { recursive: true, mode: 0o700 }).then(() => path.join(this.opts.dataDir, 'private'))
      : mkdtemp(path.join(tmpdir(), 'svc-duckdb-'));
    const dir = path.join(await this.scratchRoot, workspaceId, what);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    return dir;
  }

  private async openDatabase(workspaceId: string): Promise<Db> {
    if (!/^[0-9a-f-]{36}$/.test(workspaceId)) throw new QueryFailure('failed', 'invalid workspace id');
    this.evict();
    if (this.dbs.size >= this.opts.maxDatabases) {
      throw new QueryFailure('busy', `all ${this.opts.maxDatabases} embedded databases are busy (engines.embedded_max_databases); retry shortly`);
    }
    const { DuckDBInstance } = await loadDuckDB();
    let file = ':memory:';
    if (this.opts.dataDir) {
      await mkdir(this.opts.dataDir, { recursive: true });
      file = path.join(this.opts.dataDir, `${workspaceId}.duckdb`);
    }
    const spill = await this.privateDir(workspaceId, 'spill');
    const readable = this.opts.readable?.(workspaceId) ?? [];
    for (const dir of readable) await mkdir(dir, { recursive: true, mode: 0o700 });
    const instance = await DuckDBInstance.create(file, {
      memory_limit: this.opts.memoryLimit,
      threads: String(this.opts.threads),
      temp_directory: spill,
      ...NO_EXTENSIONS,
    });
    // In this order: the folders first (DuckDB refuses to change them once external access is
    // off), then external access off, then the lock over all of it.
    const setup = await instance.connect();
    try {
      for (const stmt of [
        `SET allowed_directories = [${[spill, ...readable].map((d) => quote(d + path.sep)).join(', ')}]`,
        'SET enable_external_access = false',
        'SET lock_configuration = true',
        // the catalog's names (lakehouse/stubs.ts): an in-memory database, no file
        "ATTACH ':memory:' AS iceberg",
      ]) await setup.run(stmt);
      const name = String((await setup.runAndReadAll('SELECT current_database()')).getRows()[0]![0]);
      const db: Db = { id: workspaceId, instance, active: 0, lastUsed: Date.now(), idle: [setup], name };
      this.dbs.set(workspaceId, db);
      this.log.info({ workspace: workspaceId, persistent: file !== ':memory:' }, 'embedded database opened');
      return db;
    } catch (err) {
      this.discard(setup);
      instance.closeSync();
      throw err;
    }
  }

  /** Closes idle databases, least recently used first, until one more fits. */
  private evict(): void {
    for (const [id, db] of this.dbs) {
      if (this.dbs.size < this.opts.maxDatabases) return;
      if (db.active > 0) continue;
      this.dbs.delete(id);
      this.closeInstance(id, db);
    }
  }

  discard(conn: DuckDBConnection | undefined): void {
    try { conn?.closeSync(); } catch (err) { this.log.warn({ err: (err as Error).message }, 'closing an embedded connection failed'); }
  }

  private closeInstance(id: string, db: Db): void {
    for (const c of db.idle.splice(0)) this.discard(c);
    try { db.instance.closeSync(); } catch (err) { this.log.warn({ workspace: id, err: (err as Error).message }, 'closing an embedded database failed'); }
    this.log.info({ workspace: id }, 'embedded database closed');
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const [id, db] of this.dbs) this.closeInstance(id, db);
    this.dbs.clear();
    // A temporary root goes with the engine; under embedded_data_dir the folders stay (empty).
    if (this.scratchRoot && !this.opts.dataDir) {
      const root = await this.scratchRoot.catch(() => undefined);
      if (root) await rm(root, { recursive: true, force: true }).catch((err: Error) => this.log.warn({ err: err.message }, 'removing the embedded engine\'s temporary folder failed'));
    }
  }
}

const quote = (s: string) => `'${s.replace(/'/g, "''")}'`;
