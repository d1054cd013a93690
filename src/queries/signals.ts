// Query signals across replicas over Redis pub/sub: `cancel` reaches the replica running a query,
// `done` wakes the request waiting for it (wait_ms). Delivered here at once as well, so a query
// run and waited on in one process needs no round trip. Signals are hints: the database row is
// the truth, and a lost signal only means a waiter answers 202 at its wait_ms.
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { closeRedis } from '../util/redis-close.js';

export type SignalKind = 'cancel' | 'done';
type Handler = () => void;

export class QuerySignals {
  private sub: Redis | undefined;
  private subscribing: Promise<void> | undefined;
  private readonly handlers = new Map<string, Set<Handler>>();
  private readonly channel: string;

  /** `available`: whether Redis is connected (Queues.available); a signal is not published while it is not. */
  constructor(private readonly redis: () => Redis, prefix: string, private readonly log: Logger, private readonly available: () => boolean) {
    this.channel = `${prefix}:query-signals`;
  }

  /** Subscribes once per process; later calls wait for the same subscription. */
  ready(): Promise<void> {
    this.subscribing ??= (async () => {
      const sub = this.redis().duplicate();
      sub.on('error', (err) => this.log.warn({ err: err.message }, 'query signal subscriber error'));
      sub.on('message', (_ch, msg: string) => this.deliver(msg));
      await sub.subscribe(this.channel);
      this.sub = sub;
    })().catch((err: Error) => {
      this.subscribing = undefined;
      throw err;
    });
    return this.subscribing;
  }

  /** Calls fn when the signal arrives; returns the function that stops listening. */
  on(kind: SignalKind, queryId: string, fn: Handler): () => void {
    const key = `${kind}:${queryId}`;
    let set = this.handlers.get(key);
    if (!set) this.handlers.set(key, (set = new Set()));
    set.add(fn);
    return () => {
      set.delete(fn);
      if (set.size === 0 && this.handlers.get(key) === set) this.handlers.delete(key);
    };
  }

  async emit(kind: SignalKind, queryId: string): Promise<void> {
    const msg = `${kind}:${queryId}`;
    this.deliver(msg, true);
    // the client would hold the publish for the whole outage, and the cancel or end waiting on it
    if (!this.available()) {
      this.log.warn({ signal: kind, query: queryId }, 'query signal not published (Redis is not connected): other replicas learn it from the database');
      return;
    }
    try {
      await this.redis().publish(this.channel, msg);
    } catch (err) {
      this.log.warn({ err: (err as Error).message, signal: kind, query: queryId }, 'query signal not published: other replicas learn it from the database');
    }
  }

  /** Resolves true when `done` arrives within ms, false otherwise. */
  waitDone(queryId: string, ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => { off(); resolve(false); }, ms);
      const off = this.on('done', queryId, () => { clearTimeout(timer); off(); resolve(true); });
    });
  }

  private readonly seen = new Set<string>();

  private deliver(msg: string, local = false): void {
    // A local emit is also echoed by Redis: deliver each message once per process.
    if (local) { this.seen.add(msg); if (this.seen.size > 10_000) this.seen.clear(); } else if (this.seen.delete(msg)) return;
    const set = this.handlers.get(msg);
    if (!set) return;
    for (const fn of [...set]) fn();
  }

  async close(): Promise<void> {
    const sub = this.sub;
    this.sub = undefined;
    this.subscribing = undefined;
    if (sub) await closeRedis(sub);
  }
}
