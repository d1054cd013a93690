// One Services object built from the configuration and passed explicitly: no module singletons,
// so each test builds its own.
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Config } from './config/index.js';
import { createDb, type Db } from './db/index.js';
import { createObjectStore, type ObjectStore } from './storage/object-store.js';
import { createStorage, type Storage } from './storage/tenant-store.js';
import { createLogging, type Logging } from './log/logger.js';
import { systemClock, type Clock } from './clock.js';
import { createMetrics, type Metrics } from './metrics.js';
import { SessionStore } from './auth/sessions.js';
import { AccessResolver } from './access/access.js';
import { AuditSink } from './audit/sink.js';
import { RateLimiter } from './auth/rate-limit.js';
import { CacheInvalidator } from './util/invalidation.js';
import { Queues } from './queue/queues.js';
import { bullWorkflowQueue } from './jobs/workflow-queue.js';
import type { WorkflowQueue } from './workflows/ports.js';
import { CurrentFlows } from './workflows/current-flows.js';
import { Sealer } from './secrets/seal.js';
import { QueryEngines } from './queries/run.js';
import { Lakehouse, lakehouseCache } from './queries/lakehouse/lakehouse.js';
import { catalogWrites } from './catalog/engine-writes.js';
import { engineLookup } from './queries/lookup.js';
import { ManifestCache } from './iceberg/cache.js';
import { closeRedis } from './util/redis-close.js';

export interface Services {
  config: Config;
  logging: Logging;
  log: Logger;
  db: Db;
  /** The raw bucket: only src/storage uses it (tests read it to check what is stored). */
  s3: ObjectStore;
  /** The bucket through the storage rule: a tenant store per workspace scope (src/storage/tenant-store.ts). */
  storage: Storage;
  clock: Clock;
  metrics: Metrics;
  sessions: SessionStore;
  access: AccessResolver;
  audit: AuditSink;
  /** Clears caches here and, over Redis, on the other replicas (src/util/invalidation.ts). */
  invalidator: CacheInvalidator;
  /** Local sign-in attempts per address and per email (in memory, this replica). */
  loginLimiter: RateLimiter;
  /** Token endpoint requests per address and client id (in memory, this replica). */
  tokenLimiter: RateLimiter;
  /** BullMQ queues, created on first use. */
  queues: Queues;
  /** The workflow core's queue port (src/workflows/ports.ts) on those queues. */
  workflowQueue: WorkflowQueue;
  /** Current revision and inputs of each flow, for starting executions (invalidated on save and delete). */
  flows: CurrentFlows;
  /** Seals and unseals stored secrets with secrets.master_key. */
  sealer: Sealer;
  /** Engines SQL runs on (src/queries/run.ts): the embedded DuckDB one and named engines. */
  queryEngines: QueryEngines;
  /**
   * Decoded Iceberg manifests and manifest lists of this replica (catalog.manifest_cache_bytes),
   * shared by the catalog's scan planning and the embedded engine's reads of catalog tables.
   */
  manifests: ManifestCache;
  /** Redis for BullMQ and invalidation, connected on first use. */
  redis(): Redis;
  /** Registers teardown run by close(), last registered first. */
  onClose(fn: () => Promise<void>): void;
  close(): Promise<void>;
}

export interface ServiceOverrides {
  clock?: Clock;
  logging?: Logging;
  /** BullMQ key prefix (default `svc`); tests use their own to share one Redis. */
  queuePrefix?: string;
}

export function createServices(config: Config, overrides: ServiceOverrides = {}): Services {
  const logging = overrides.logging ?? createLogging({ filter: config.log.filter, json: config.log.json });
  const clock = overrides.clock ?? systemClock;
  const db = createDb({
    url: config.database.url, maxConnections: config.database.max_connections,
    onError: (err) => logging.module('svc::db').warn({ err: err.message }, 'database connection lost: the pool drops it and opens another'),
  });
  const s3 = createObjectStore(config.storage);
  const metrics = createMetrics();
  let redis: Redis | undefined;
  const closers: Array<() => Promise<void>> = [];
  const getRedis = () => {
    if (!redis) {
      redis = new Redis(config.redis.url, { maxRetriesPerRequest: null });
      redis.on('error', (err) => logging.module('svc::redis').warn({ err: err.message }, 'redis connection error'));
    }
    return redis;
  };
  const invalidator = new CacheInvalidator(getRedis, logging.module('svc::redis'));
  // The shared connection logs its own errors; a queue's are the same ones, seen again.
  const queues = new Queues(getRedis, overrides.queuePrefix ?? 'svc', (queue, err) => logging.module('svc::jobs').debug({ queue, err: err.message }, 'queue error (also reported by the Redis connection)'));
  const rl = config.rate_limit;
  const sessions = new SessionStore(db, clock, {
    absoluteTtlMs: config.session.absolute_ttl_hours * 3_600_000,
    idleTtlMs: config.session.idle_ttl_minutes * 60_000,
  }, invalidator);
  const access = new AccessResolver(db, clock);
  invalidator.on('session', (keys) => sessions.forget(keys));
  invalidator.on('access', (keys) => access.forget(keys));
  const flows = new CurrentFlows(db, clock);
  invalidator.on('flow', (keys) => flows.forget(keys));
  const queryEngines = new QueryEngines(config, logging.module('svc::queries'));
  queryEngines.setLookup(engineLookup(db, logging.module('svc::queries')));
  const storage = createStorage(s3, config);
  // The embedded engine reads and writes the catalog's tables when the catalog is on (lakehouse/).
  // (its writes go through the catalog's own operations, handed in once the services exist)
  let built: Services | undefined;
  const manifests = new ManifestCache(config.catalog.manifest_cache_bytes);
  if (config.catalog.enabled) queryEngines.setLakehouse(() => new Lakehouse({ db, storage, manifests, log: logging.module('svc::lakehouse'), policies: config.policy_service.enabled, writes: catalogWrites(() => built!), ...lakehouseCache(config) }));
  const closeLog = logging.module('svc');
  const closing = (what: string) => (err: Error) => closeLog.warn({ err: err.message }, `shutdown: ${what} failed`);
  built = {
    config,
    logging,
    log: logging.root,
    db,
    s3,
    storage,
    clock,
    metrics,
    invalidator,
    sessions,
    access,
    audit: new AuditSink(db, clock, {
      enabled: config.audit.enabled, capacity: config.audit.channel_capacity,
      batchSize: config.audit.batch_size, flushIntervalMs: config.audit.flush_interval_ms,
    }, logging.module('svc::audit'), { dropped: (n) => metrics.auditDropped.inc(n), written: (n) => metrics.auditWritten.inc(n) }),
    loginLimiter: new RateLimiter({ max: rl.login_max_attempts, windowMs: rl.login_window_secs * 1000, lockoutMs: rl.login_lockout_secs * 1000 }, clock),
    tokenLimiter: new RateLimiter({ max: rl.token_max_attempts, windowMs: rl.token_window_secs * 1000, lockoutMs: rl.token_lockout_secs * 1000 }, clock),
    queues,
    workflowQueue: bullWorkflowQueue(queues),
    flows,
    sealer: new Sealer(config.secrets.master_key),
    queryEngines,
    manifests,
    redis: getRedis,
    onClose(fn) { closers.push(fn); },
    async close() {
      for (const c of closers.reverse()) await c().catch(closing('a registered teardown'));
      await queues.close();
      await queryEngines.close().catch(closing('closing the embedded databases'));
      await this.audit.stop().catch(closing('the audit writer\'s last flush'));
      if (redis) await closeRedis(redis);
      s3.close();
      await db.destroy();
    },
  };
  return built;
}
