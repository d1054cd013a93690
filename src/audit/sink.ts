// Authorization decisions go through an in-memory queue of `audit.channel_capacity` events; when
// it is full new events are dropped and counted (best effort, SPEC 6.2). A writer flushes batches
// of at most `audit.batch_size` rows, at least every `audit.flush_interval_ms`.
//
// Where a batch goes:
// - with a hand-over attached (`svc serve` attaches the `audit` BullMQ queue, src/jobs/maintenance.ts)
//   each batch becomes one job; a worker on that queue writes it in one INSERT. Once handed over,
//   a batch survives this process dying: any replica's worker writes it.
// - when the hand-over fails (Redis unreachable) the batch is written directly, so events are not
//   lost silently; such batches are counted (svc_audit_events_direct_total).
// - without a hand-over (tests, tools) batches are written directly, one INSERT each.
import type { Logger } from 'pino';
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { Db } from '../db/index.js';
import type { Clock } from '../clock.js';

export interface AuthzEvent {
  action: string;
  actorId: string | null;
  actor: string | null;
  target: string | null;
  workspace?: string | null;
  decision: 'allow' | 'deny';
  details?: Record<string, unknown>;
}

export interface AuditSinkOptions {
  enabled: boolean;
  capacity: number;
  batchSize: number;
  flushIntervalMs: number;
}

export interface AuditCounters { dropped(n: number): void; written(n: number): void }

/** One event as carried in a queued batch (JSON: `at` is an ISO string). */
export interface QueuedAuthzEvent extends AuthzEvent { at: string }
export interface AuditBatch { id: string; events: QueuedAuthzEvent[] }

/** Durable hand-over of batches (the `audit` queue). */
export interface AuditHandOver {
  /** Stores the batch durably; throws when it could not (then the sink writes it directly). */
  add(batch: AuditBatch): Promise<void>;
  /** Waits (bounded) until the given batches are written; used by flush() for read-your-writes. */
  settle?(batchIds: string[]): Promise<void>;
  /** Counts batches written directly because the hand-over failed. */
  fellBack?(events: number): void;
}

/** Writes one batch of authorization events in one INSERT. */
export async function insertAuthzEvents(db: Db, events: Array<AuthzEvent & { at: Date | string }>): Promise<void> {
  if (events.length === 0) return;
  await db.insertInto('audit_events').values(events.map((e) => ({
    at: typeof e.at === 'string' ? new Date(e.at) : e.at, kind: 'authz' as const, action: e.action, actor_id: e.actorId, actor: e.actor,
    target: e.target, workspace: e.workspace ?? null, decision: e.decision,
    details: JSON.stringify(e.details ?? {}),
  }))).execute();
}

/**
 * True when the first and the last event of a batch are already stored (same instant, action,
 * actor, target and decision): used only when a queued batch is delivered again, to tell a batch
 * that was committed before its worker died from one that was not.
 */
export async function authzBatchStored(db: Db, events: QueuedAuthzEvent[]): Promise<boolean> {
  if (events.length === 0) return true;
  for (const e of [events[0], events[events.length - 1]]) {
    const row = await db.selectFrom('audit_events').select('id')
      .where('at', '=', new Date(e.at)).where('kind', '=', 'authz').where('action', '=', e.action)
      .where(sql<boolean>`actor_id IS NOT DISTINCT FROM ${e.actorId}`)
      .where(sql<boolean>`target IS NOT DISTINCT FROM ${e.target}`)
      .where('decision', '=', e.decision)
      .limit(1).executeTakeFirst();
    if (!row) return false;
  }
  return true;
}

/** flush() waits for at most this many of the latest handed-over batches (older ones are long done). */
const MAX_OUTSTANDING = 100;

export class AuditSink {
  private buffer: Array<AuthzEvent & { at: Date }> = [];
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  private handOver: AuditHandOver | null = null;
  /** Batches handed over and not yet known to be written (for flush()'s wait). */
  private outstanding: string[] = [];

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly opts: AuditSinkOptions,
    private readonly log: Logger,
    private readonly counters?: AuditCounters,
  ) {}

  /** Enqueues without waiting; false when dropped (queue full) or auditing is off. */
  record(ev: AuthzEvent): boolean {
    if (!this.opts.enabled) return false;
    if (this.buffer.length >= this.opts.capacity) {
      this.counters?.dropped(1);
      return false;
    }
    this.buffer.push({ ...ev, at: this.clock.now() });
    if (this.buffer.length >= this.opts.batchSize) void this.drain();
    return true;
  }

  get pending(): number { return this.buffer.length; }

  /** Routes batches through a durable hand-over (null: write directly again). */
  attachHandOver(h: AuditHandOver | null): void {
    this.handOver = h;
    if (!h) this.outstanding = [];
  }

  start(): void {
    if (this.timer || !this.opts.enabled) return;
    this.timer = setInterval(() => { void this.drain(); }, Math.max(10, this.opts.flushIntervalMs));
    this.timer.unref();
  }

  /**
   * Hands over (or writes) everything queued so far, in batches of at most batchSize rows; with a
   * hand-over that can settle, also waits (bounded) until the handed-over batches are written, so
   * a reader that flushes first sees its own events.
   */
  async flush(): Promise<void> {
    await this.drain();
    const h = this.handOver;
    if (h?.settle && this.outstanding.length > 0) {
      const ids = this.outstanding.splice(0);
      await h.settle(ids).catch((err: Error) => this.log.warn({ err: err.message, batches: ids.length }, 'audit flush: could not wait for the handed-over batches; a reader may not see them yet'));
    }
  }

  /** Empties the in-memory queue without waiting for queued batches to be written. */
  private async drain(): Promise<void> {
    while (this.flushing) await this.flushing;
    if (this.buffer.length === 0) return;
    this.flushing = (async () => {
      while (this.buffer.length > 0) {
        const batch = this.buffer.splice(0, this.opts.batchSize);
        const h = this.handOver;
        if (h) {
          const id = randomUUID();
          try {
            await h.add({ id, events: batch.map((e) => ({ ...e, at: e.at.toISOString() })) });
            this.outstanding.push(id);
            if (this.outstanding.length > MAX_OUTSTANDING) this.outstanding.splice(0, this.outstanding.length - MAX_OUTSTANDING);
            continue;
          } catch (err) {
            h.fellBack?.(batch.length);
            this.log.warn({ err: (err as Error).message, events: batch.length }, 'audit queue unreachable: writing the batch directly');
          }
        }
        try {
          await insertAuthzEvents(this.db, batch);
          this.counters?.written(batch.length);
        } catch (err) {
          // Best effort: a failed batch is counted as dropped rather than retried forever.
          this.counters?.dropped(batch.length);
          this.log.warn({ err: (err as Error).message, events: batch.length }, 'audit batch could not be written');
        }
      }
    })();
    try { await this.flushing; } finally { this.flushing = undefined; }
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.drain();
  }
}
