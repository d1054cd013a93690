// The query service of a Services object, built on first use and closed with it.
import type { Services } from '../services.js';
import { QUEUES } from '../jobs/queues.js';
import { createDb } from '../db/index.js';
import { QueryService } from './service.js';
import { ResultStore } from './results.js';
import { QuerySignals } from './signals.js';

const built = new WeakMap<Services, QueryService>();

export function queryService(services: Services): QueryService {
  let q = built.get(services);
  if (!q) {
    const log = services.logging.module('svc::queries');
    const results = new ResultStore(services.s3, services.config.engine.results_prefix, log);
    const signals = new QuerySignals(services.redis, services.queues.prefix, log);
    const cfg = services.config;
    const recordDb = createDb({ url: cfg.database.url, maxConnections: Math.min(cfg.engine.concurrency, cfg.database.max_connections), appName: 'svc-queries', options: '-c synchronous_commit=off' });
    q = new QueryService({
      db: services.db, recordDb, clock: services.clock, config: services.config, engines: services.queryEngines,
      results, signals, queue: () => services.queues.get(QUEUES.queries), log,
    });
    built.set(services, q);
    services.onClose(async () => { await signals.close(); await results.close(); await recordDb.destroy(); });
  }
  return q;
}
