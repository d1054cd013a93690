// The query service of a Services object, built on first use and closed with it.
import type { Services } from '../services.js';
import { QueryService } from './service.js';
import { ResultStore } from './results.js';
import { QuerySignals } from './signals.js';
import { QueryRecords } from './records.js';

const built = new WeakMap<Services, QueryService>();

export function queryService(services: Services): QueryService {
  let q = built.get(services);
  if (!q) {
    const log = services.logging.module('svc::queries');
    const results = new ResultStore(services.storage, log);
    const signals = new QuerySignals(services.redis, services.queues.prefix, log, () => services.queues.available());
    const records = new QueryRecords(services.db, log);
    q = new QueryService({
      db: services.db, records, clock: services.clock, config: services.config, engines: services.queryEngines,
      results, signals, queues: services.queues, log,
    });
    built.set(services, q);
    // The database closes after every closer: the last records are written before it.
    services.onClose(async () => { await records.settled(); await signals.close(); await results.close(); });
  }
  return q;
}
