// Cache invalidation across replicas over Redis pub/sub: a revoked session or a changed grant
// clears the other replicas' caches at once (their short TTL bounds the delay if a message is lost).
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Invalidator } from '../auth/sessions.js';

const CHANNEL = 'svc:invalidate';

export interface InvalidationMessage { origin: string; kind: 'session' | 'access'; keys: string[] }

export class RedisInvalidator implements Invalidator {
  readonly origin = randomUUID();
  constructor(private readonly redis: () => Redis) {}

  publish(kind: 'session' | 'access', keys: string[]): void {
    const msg: InvalidationMessage = { origin: this.origin, kind, keys };
    this.redis().publish(CHANNEL, JSON.stringify(msg)).catch(() => {});
  }

  /** Subscribes on a dedicated connection; returns the unsubscribe function. */
  async listen(onMessage: (m: InvalidationMessage) => void): Promise<() => Promise<void>> {
    const sub = this.redis().duplicate();
    sub.on('error', () => {});
    sub.on('message', (_ch, raw) => {
      try {
        const m = JSON.parse(raw) as InvalidationMessage;
        if (m.origin !== this.origin) onMessage(m);
      } catch { /* not ours */ }
    });
    await sub.subscribe(CHANNEL);
    return async () => { await sub.quit().catch(() => sub.disconnect()); };
  }
}
