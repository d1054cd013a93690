// Authorization decisions go through an in-memory queue of `audit.channel_capacity` events; when
// it is full new events are dropped and counted (best effort, SPEC 6.2). A writer flushes batches
// of at most `audit.batch_size` rows per INSERT, at least every `audit.flush_interval_ms`.
import type { Logger } from 'pino';
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

export class AuditSink {
  private buffer: Array<AuthzEvent & { at: Date }> = [];
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;

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
    if (this.buffer.length >= this.opts.batchSize) void this.flush();
    return true;
  }

  get pending(): number { return this.buffer.length; }

  start(): void {
    if (this.timer || !this.opts.enabled) return;
    this.timer = setInterval(() => { void this.flush(); }, Math.max(10, this.opts.flushIntervalMs));
    this.timer.unref();
  }

  /** Writes everything queued so far, in INSERTs of at most batchSize rows. */
  async flush(): Promise<void> {
    while (this.flushing) await this.flushing;
    if (this.buffer.length === 0) return;
    this.flushing = (async () => {
      while (this.buffer.length > 0) {
        const batch = this.buffer.splice(0, this.opts.batchSize);
        try {
          await this.db.insertInto('audit_events').values(batch.map((e) => ({
            at: e.at, kind: 'authz' as const, action: e.action, actor_id: e.actorId, actor: e.actor,
            target: e.target, workspace: e.workspace ?? null, decision: e.decision,
            details: JSON.stringify(e.details ?? {}),
          }))).execute();
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
    await this.flush();
  }
}
