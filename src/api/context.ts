// What route plugins receive. Services are reached lazily so that `svc openapi` can build the
// whole route tree without configuration, database or network.
import type { Services } from '../services.js';
import type { Metrics } from '../metrics.js';

export interface AppContext {
  services(): Services;
  metrics: Metrics;
}
