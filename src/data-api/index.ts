// The Data API's per-Services state: the rate-limit buckets, the response cache and the access-log
// writer, built on
// first use and closed with the Services.
import type { Services } from '../services.js';
import { DataApiLimits } from './limits.js';
import { AccessLogWriter } from './access-log.js';

const built = new WeakMap<Services, DataApiLimits>();
const logs = new WeakMap<Services, AccessLogWriter>();

export function dataApiAccessLog(s: Services): AccessLogWriter {
  let w = logs.get(s);
  if (!w) {
    w = new AccessLogWriter(s.db, s.logging.module('svc::data-api'));
    logs.set(s, w);
    const made = w;
    s.onClose(() => made.flush());
  }
  return w;
}

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
