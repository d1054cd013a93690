// GET /catalog/v1/config of the Iceberg REST catalog specification: the server's configuration
// for a client. The `warehouse` parameter names a workspace (one warehouse per workspace, as
// Lakekeeper's warehouses); the answer's `overrides.prefix` is that workspace's slug, which the
// client puts into every later path. `endpoints` lists what this server implements: the Java
// client calls only what is advertised.
export const ENDPOINTS = [
  'GET /v1/{prefix}/namespaces',
  'POST /v1/{prefix}/namespaces',
  'GET /v1/{prefix}/namespaces/{namespace}',
  'HEAD /v1/{prefix}/namespaces/{namespace}',
  'DELETE /v1/{prefix}/namespaces/{namespace}',
  'POST /v1/{prefix}/namespaces/{namespace}/properties',
  'GET /v1/{prefix}/namespaces/{namespace}/tables',
  'POST /v1/{prefix}/namespaces/{namespace}/tables',
  'GET /v1/{prefix}/namespaces/{namespace}/tables/{table}',
  'HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}',
  'POST /v1/{prefix}/namespaces/{namespace}/tables/{table}',
  'DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}',
  'POST /v1/{prefix}/namespaces/{namespace}/register',
  'POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/metrics',
  'POST /v1/{prefix}/tables/rename',
  'POST /v1/{prefix}/transactions/commit',
  'GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/credentials',
  'POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/sign',
  'POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan',
  'GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan/{plan-id}',
  'DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan/{plan-id}',
  'POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/tasks',
  'GET /v1/{prefix}/namespaces/{namespace}/views',
  'POST /v1/{prefix}/namespaces/{namespace}/views',
  'GET /v1/{prefix}/namespaces/{namespace}/views/{view}',
  'HEAD /v1/{prefix}/namespaces/{namespace}/views/{view}',
  'POST /v1/{prefix}/namespaces/{namespace}/views/{view}',
  'DELETE /v1/{prefix}/namespaces/{namespace}/views/{view}',
  'POST /v1/{prefix}/views/rename',
];

/** How long a stored Idempotency-Key answer is replayed (ISO 8601 duration, as the spec writes it). */
export const IDEMPOTENCY_LIFETIME = 'PT30M';

export interface CatalogConfigResponse {
  defaults: Record<string, string>;
  overrides: Record<string, string>;
  endpoints: string[];
  'idempotency-key-lifetime': string;
}

export function catalogConfig(slug: string, root: string): CatalogConfigResponse {
  return {
    defaults: { 'rest-page-size': '1000' },
    overrides: { prefix: slug, 'warehouse-location': root },
    endpoints: ENDPOINTS,
    'idempotency-key-lifetime': IDEMPOTENCY_LIFETIME,
  };
}
