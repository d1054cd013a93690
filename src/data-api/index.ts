// The Data API's per-Services state: the rate-limit buckets and the response cache, built on
// first use and closed with the Services.
import type { Services } from '../services.js';
import { DataApiLimits } from './limits.js';

const built = new WeakMap<Services, DataApiLimits>();

export function dataApiLimits(s: Services): DataApiLimits {
  let l = built.get(s);
  if (!l) {
    l = new DataApiLimits(s.config, () => s.clock.now().getTime(), s.logging.module('svc::data-api'));
    built.set(s, l);
    const made = l;
    s.onClose(() => made.close());
  }
  return l;
}
