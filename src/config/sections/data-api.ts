// The Data API (SPEC 8 data_api).
import { count, optStr, section } from '../builders.js';

export const data_api = section('Data API', {
  access_log_retention_days: count(90, 'days access-log entries are kept; 0 means no pruning'),
  public_url: optStr(
    'stamped into the generated OpenAPI document and the token endpoint given to new clients; unset falls back to the idp issuer, then `catalog.public_url`',
  ),
  replicas: count(1, 'number of Data API replicas; above 1 requires `data_api.shared_store_url`'),
  shared_store_url: optStr(
    'key-value store URL for rate-limit buckets and response cache across replicas; unset means process-local',
    'with data_api.replicas > 1',
  ),
});
