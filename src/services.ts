// One Services object built from the configuration and passed explicitly: no module singletons,
// so each test builds its own.
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Config } from './config/index.js';
import { createDb, type Db } from './db/index.js';
import { createObjectStore, type ObjectStore } from './storage/object-store.js';
import { createLogging, type Logging } from './log/logger.js';
import { systemClock, type Clock } from './clock.js';

export interface Services {
  config: Config;
  logging: Logging;
  log: Logger;
  db: Db;
  s3: ObjectStore;
  clock: Clock;
  /** Redis for BullMQ, connected on first use. */
  redis(): Redis;
  close(): Promise<void>;
}

export interface ServiceOverrides {
  clock?: Clock;
  logging?: Logging;
}

export function createServices(config: Config, overrides: ServiceOverrides = {}): Services {
  const logging = overrides.logging ?? createLogging({ filter: config.log.filter, json: config.log.json });
  const db = createDb({ url: config.database.url, maxConnections: config.database.max_connections });
  const s3 = createObjectStore(config.storage);
  let redis: Redis | undefined;
  const closers: Array<() => Promise<void>> = [];
  return {
    config,
    logging,
    log: logging.root,
    db,
    s3,
    clock: overrides.clock ?? systemClock,
    redis() {
      if (!redis) {
        redis = new Redis(config.redis.url, { maxRetriesPerRequest: null, lazyConnect: false });
        redis.on('error', (err) => logging.module('svc::redis').warn({ err: err.message }, 'redis connection error'));
        closers.push(async () => { await redis!.quit().catch(() => redis!.disconnect()); });
      }
      return redis;
    },
    async close() {
      for (const c of closers.reverse()) await c();
      s3.close();
      await db.destroy();
    },
  };
}
