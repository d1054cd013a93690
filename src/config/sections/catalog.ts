// The embedded table catalog and the policy service (SPEC 8 catalog, policy_service).
import { str, bool, section, count } from '../builders.js';

export const catalog = section('embedded table catalog', {
  enabled: bool(false, 'run the catalog in the server process; needs warehouse, auth_token and the storage credentials'),
  warehouse: str('s3://warehouse', 'warehouse location', 'with catalog.enabled'),
  auth_token: str('', 'static admin token', 'with catalog.enabled'),
  public_url: str(
    'http://localhost:8080',
    'base origin without `/catalog`, advertised to clients; fallback for `idp.issuer`',
  ),
  system_user: str(
    'svc-system',
    'stable in-process principal; changing it creates a different system administrator',
  ),
  manifest_cache_bytes: count(
    64 * 1024 * 1024,
    'bytes of decoded Iceberg manifests and manifest lists each replica keeps for scan planning, the catalog\'s and the embedded engine\'s (least recently used out first; 0 keeps none)',
  ),
  plan_wait_ms: count(
    2000,
    'how long planTableScan plans before answering `submitted` with a plan id (planning goes on; fetchPlanningResult gives the result); 0 answers every plan asynchronously',
  ),
  plan_task_files: count(
    1000,
    'manifest entries (data files) one answer of server-side scan planning holds: a plan of a larger table is answered with plan tasks of about this many entries each, fetched by fetchScanTasks',
  ),
});

export const policy_service = section('policy service polled by engine plugins', {
  enabled: bool(false, 'serve the policy service polled by engine plugins and turn on policy administration'),
  auth_token: str('', 'token the plugins present; when set, requests without it get HTTP 401'),
});
