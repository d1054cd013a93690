// Commands change the database directly, so after a change they publish what running servers must
// forget (src/util/invalidation.ts): a grant made with `svc workspace add-group` or a secret
// rotated with `svc client rotate` reaches every replica at once. Redis is reached only when
// something changed; when it cannot be reached the change stands, a warning says so, and servers
// apply it when their cached copies expire (seconds).
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import type { Config } from '../config/index.js';
import { describeUrl } from '../db/index.js';
import { systemClock } from '../clock.js';
import { NOT_PUBLISHED, publishInvalidation, type CacheInvalidation, type CacheKind, type ChangeDeps } from '../util/invalidation.js';
import { withMigratedDb } from './db.js';

const TIMEOUT_MS = 5_000;

class PublishOnly implements CacheInvalidation {
  private redis: Redis | undefined;
  private readonly origin = `svc-cli:${randomUUID()}`;
  constructor(private readonly url: string) {}

  async invalidate(kind: CacheKind, keys: string[]): Promise<void> {
    if (keys.length === 0) return;
    if (!this.redis) {
      // No retries: a command must not hang on a Redis that is down.
      this.redis = new Redis(this.url, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: TIMEOUT_MS, retryStrategy: () => null });
      this.redis.on('error', () => { /* the failed publish below reports it */ });
    }
    const reason = await publishInvalidation(this.redis, { origin: this.origin, kind, keys }, TIMEOUT_MS);
    if (reason) process.stderr.write(`warning: ${NOT_PUBLISHED} (Redis at ${describeUrl(this.url)}: ${reason.split('\n')[0]})\n`);
  }

  async close(): Promise<void> {
    if (!this.redis) return;
    await this.redis.quit().catch(() => this.redis!.disconnect()); // already reported by invalidate
  }
}

/** A migrated database plus the invalidation that reaches running servers, for commands that change things. */
export async function withChangeDeps<T>(cfg: Config, fn: (deps: ChangeDeps) => Promise<T>): Promise<T> {
  const invalidator = new PublishOnly(cfg.redis.url);
  try {
    return await withMigratedDb(cfg, (db) => fn({ db, invalidator, clock: systemClock }));
  } finally {
    await invalidator.close();
  }
}
