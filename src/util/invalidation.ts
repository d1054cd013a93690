// Cache invalidation, here and across replicas over Redis pub/sub. A change invalidates what it
// changes wherever it is made (an API route, the command line, a job): domain functions call
// `invalidate(kind, keys)` after their transaction commits. In a server that clears this
// replica's cache at once and publishes the keys so the other replicas clear theirs (their short
// TTL bounds the delay if a message is lost); on the command line it only publishes.
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Db } from '../db/index.js';
import type { Clock } from '../clock.js';

const CHANNEL = 'svc:invalidate';

/**
 * The caches a change can make stale: sessions (by id hash), access snapshots (by user id, `*` =
 * all), OAuth clients (by client id), current flows (by workspace, namespace and id), and the
 * view running task attempts have of their execution (`kill`, by execution id: a kill reaches
 * them at once instead of at their next poll).
 */
export type CacheKind = 'session' | 'access' | 'client' | 'flow' | 'kill';
const KINDS: readonly CacheKind[] = ['session', 'access', 'client', 'flow', 'kill'];

export interface InvalidationMessage { origin: string; kind: CacheKind; keys: string[] }

/** What a domain change calls after it commits. Never rejects: a lost message only delays the other replicas. */
export interface CacheInvalidation {
  invalidate(kind: CacheKind, keys: string[]): Promise<void>;
}

/** What a governance change needs: the database, the caches to invalidate once it committed, the clock. */
export interface ChangeDeps { db: Db; invalidator: CacheInvalidation; clock: Clock }

/** Publishes one message; null once Redis took it, else why not (also after `timeoutMs`). */
export async function publishInvalidation(redis: Redis, msg: InvalidationMessage, timeoutMs?: number): Promise<string | null> {
  let timer: NodeJS.Timeout | undefined;
  try {
    const sent = redis.publish(CHANNEL, JSON.stringify(msg));
    if (timeoutMs === undefined) await sent;
    else {
      await Promise.race([sent, new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs); })]);
    }
    return null;
  } catch (err) {
    return (err as Error).message || String(err);
  } finally {
    clearTimeout(timer);
  }
}

export const NOT_PUBLISHED = 'cannot publish a cache invalidation: other replicas keep their cached entries until they expire';

/** The server's invalidation: local caches register a handler per kind; remote messages reach the same handlers. */
export class CacheInvalidator implements CacheInvalidation {
  readonly origin = randomUUID();
  private readonly handlers = new Map<CacheKind, Array<(keys: string[]) => void>>();

  constructor(private readonly redis: () => Redis, private readonly log: Logger) {}

  /** Registers what clears this replica's cache of `kind`. */
  on(kind: CacheKind, forget: (keys: string[]) => void): void {
    this.handlers.set(kind, [...(this.handlers.get(kind) ?? []), forget]);
  }

  private apply(kind: CacheKind, keys: string[]): void {
    for (const h of this.handlers.get(kind) ?? []) h(keys);
  }

  /** Clears this replica's cache at once and tells the other replicas (without waiting for Redis, which may be down). */
  invalidate(kind: CacheKind, keys: string[]): Promise<void> {
    if (keys.length === 0) return Promise.resolve();
    this.apply(kind, keys);
    this.publish(kind, keys);
    return Promise.resolve();
  }

  /** Tells the other replicas only (this one already cleared its cache). */
  publish(kind: CacheKind, keys: string[]): void {
    if (keys.length === 0) return;
    void publishInvalidation(this.redis(), { origin: this.origin, kind, keys }).then((reason) => {
      if (reason) this.log.warn({ err: reason, kind, keys: keys.length }, NOT_PUBLISHED);
    });
  }

  /** Subscribes on a dedicated connection and applies other replicas' messages; returns the unsubscribe function. */
  async listen(): Promise<() => Promise<void>> {
    const sub = this.redis().duplicate();
    sub.on('error', (err: Error) => this.log.warn({ err: err.message }, 'invalidation subscriber: redis connection error'));
    sub.on('message', (_ch: string, raw: string) => {
      const m = parseMessage(raw);
      if (!m) { this.log.warn({ bytes: raw.length }, 'invalidation subscriber: ignored a message that is not an invalidation'); return; }
      if (m.origin !== this.origin) this.apply(m.kind, m.keys);
    });
    await sub.subscribe(CHANNEL);
    return async () => {
      await sub.quit().catch((err: Error) => { this.log.warn({ err: err.message }, 'invalidation subscriber: quit failed; disconnecting'); sub.disconnect(); });
    };
  }
}

function parseMessage(raw: string): InvalidationMessage | null {
  try {
    const m = JSON.parse(raw) as Partial<InvalidationMessage>;
    if (typeof m.origin !== 'string' || !KINDS.includes(m.kind as CacheKind) || !Array.isArray(m.keys) || !m.keys.every((k) => typeof k === 'string')) return null;
    return m as InvalidationMessage;
  } catch {
    return null;
  }
}
