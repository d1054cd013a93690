// The Data API (SPEC 8 data_api).
import { count, optStr, section } from '../builders.js';

export const data_api = section('Data API', {
  access_log_retention_days: count(90, 'days access-log entries are kept; 0 means no pruning'),
  public_url: optStr(
    'stamped into the generated OpenAPI document and the token endpoint given to new clients; unset falls back to the idp issuer, then `catalog.public_url`',
  ),
  rate_limit_per_minute: count(600, 'calls a client may make to one endpoint per minute, sustained (a token bucket refilled at this rate); 0 turns rate limiting off'),
  rate_limit_burst: count(100, 'calls a client may make to one endpoint at once before the per-minute rate applies (the bucket\'s size)'),
  cache_ttl_secs: count(10, 'seconds an answer is served from the response cache (keyed on endpoint version, parameters, page, format and the caller\'s grant); 0 turns the cache off'),
  cache_max_bytes: count(64 * 1024 * 1024, 'bytes the process-local response cache holds at most (answers above 1 MiB are never cached)'),
  replicas: count(1, 'number of Data API replicas; above 1 requires `data_api.shared_store_url`'),
  shared_store_url: optStr(
    'key-value store URL for rate-limit buckets and response cache across replicas; unset means process-local',
    'with data_api.replicas > 1',
  ),
});
