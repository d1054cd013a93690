// Write-behind of the records of queries that ended in the request (docs/engines.md "The query
// API"). A small query on the embedded engine takes well under a millisecond; waiting for its
// INSERT (a PostgreSQL round trip and a WAL flush) before answering was most of the API's cost.
// So the answer goes out first and the record follows at once: rows that arrive while a write is
// in flight go together in the next multi-row INSERT (a group commit, one flush for many).
//
// Every read of queries on this replica waits for the writes queued before it (settled()), so a
// client always finds the query it was just answered. The backlog is bounded: past MAX_ROWS or
// MAX_BYTES the request waits for its own write, as it did before.
import type { Logger } from 'pino';
import type { Db } from '../db/index.js';
import type { QueriesTable } from '../db/query-types.js';
import type { Insertable } from 'kysely';

export type QueryRecord = Insertable<QueriesTable>;

/** Rows per INSERT (21 columns: far below PostgreSQL's 65,535 parameters). */
const BATCH = 100;
const MAX_ROWS = 1_000;
const MAX_BYTES = 8 * 1024 * 1024;

interface Batch { rows: QueryRecord[]; bytes: number; done: Promise<void>; resolve: () => void }

export class QueryRecords {
  /** Batches not yet written; the first may be in flight. */
  private readonly batches: Batch[] = [];
  private rows = 0;
  private bytes = 0;
  private writing = false;
  /** The batch being written (no more rows join it). */
  private inflight: Batch | undefined;

  constructor(private readonly db: Db, private readonly log: Logger) {}

  /**
   * Queues a record; the promise settles once it is written (or, when it could not be, logged as
   * lost: it never rejects). Await it when full() says the backlog is at its bound.
   */
  add(row: QueryRecord): Promise<void> {
    const size = byteSize(row);
    let open = this.batches[this.batches.length - 1];
    if (!open || open === this.inflight || open.rows.length >= BATCH) {
      let resolve!: () => void;
      const done = new Promise<void>((r) => { resolve = r; });
      open = { rows: [], bytes: 0, done, resolve };
      this.batches.push(open);
    }
    open.rows.push(row);
    open.bytes += size;
    this.rows++;
    this.bytes += size;
    // Started on the next turn of the event loop: the answer is serialized and sent first.
    if (!this.writing) { this.writing = true; setImmediate(() => void this.drain()); }
    return open.done;
  }

  /** Whether the backlog is at its bound (the caller then waits for its own write). */
  full(): boolean { return this.rows >= MAX_ROWS || this.bytes >= MAX_BYTES; }

  /** Settles once every record queued so far is written. */
  settled(): Promise<void> {
    const last = this.batches[this.batches.length - 1];
    return last ? last.done : Promise.resolve();
  }

  private async drain(): Promise<void> {
    try {
      for (let b = this.batches[0]; b; b = this.batches[0]) {
        this.inflight = b;
        await this.write(b.rows);
        this.batches.shift();
        this.rows -= b.rows.length;
        this.bytes -= b.bytes;
        b.resolve();
      }
    } finally {
      this.inflight = undefined;
      this.writing = false;
    }
  }

  private async write(rows: QueryRecord[]): Promise<void> {
    try {
      await this.db.insertInto('queries').values(rows).execute();
      return;
    } catch (err) {
      if (rows.length === 1) return this.lost(rows[0]!, err as Error);
      this.log.warn({ rows: rows.length, err: (err as Error).message }, 'writing query records together failed: writing them one by one');
    }
    // One bad row (its workspace or person deleted meanwhile) must not lose the others.
    for (const row of rows) {
      try { await this.db.insertInto('queries').values(row).execute(); } catch (err) { this.lost(row, err as Error); }
    }
  }

  private lost(row: QueryRecord, err: Error): void {
    this.log.error({ query: row.id, workspace: row.workspace_id, state: row.state, err: err.message }, 'the record of an answered query could not be written: it is missing from the history');
  }
}

function byteSize(row: QueryRecord): number {
  let n = 256;
  for (const v of Object.values(row)) if (typeof v === 'string') n += v.length;
  return n;
}
