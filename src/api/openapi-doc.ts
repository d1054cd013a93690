// The last pass over the OpenAPI document (fastify-swagger's transformObject): what generated
// clients (openapi-typescript, openapi-generator) need and route schemas cannot say themselves.
// - securitySchemes and a security requirement on every operation, derived from the route
//   family (one table here, next to the layers that enforce it: plugins/auth.ts, catalog/gate.ts,
//   routes/machines/policy.ts, idp/token-endpoint.ts);
// - an operationId on every operation, derived from method and path, unique;
// - the console's wildcard route as /ui/{path} (a parameter named `*` is not a valid name), and
//   the catalog's `{planId}` as the specification's `{plan-id}`;
// - /metrics answered as text/plain (Prometheus text exposition), not JSON;
// - the catalog's bodies with the Iceberg REST specification's schemas (catalog/openapi-spec.ts);
// - the server, named: the document is built without configuration, so its origin is a variable
//   whose default is catalog.public_url's (the origin clients are told everywhere else).
import { withIcebergSchemas } from '../catalog/openapi-spec.js';
import { defaultConfig } from '../config/index.js';

type Json = Record<string, unknown>;
type Requirement = Array<Record<string, string[]>>;

export const SECURITY_SCHEMES = {
  session: {
    type: 'apiKey', in: 'cookie', name: 'svc_session',
    description: 'Session cookie set by POST /api/auth/login or the SSO callback (name: session.cookie_name). State-changing requests also need `csrf`.',
  },
  csrf: {
    type: 'apiKey', in: 'header', name: 'X-Svc-CSRF',
    description: 'Echo of the svc_csrf cookie, required with the session cookie on POST, PUT, PATCH and DELETE (names: csrf.header_name, csrf.cookie_name).',
  },
  bearerJwt: {
    type: 'http', scheme: 'bearer', bearerFormat: 'JWT',
    description: "An access token of this service's identity provider (POST /oauth/token) whose aud includes oidc.catalog_audience.",
  },
  dataApiToken: {
    type: 'http', scheme: 'bearer', bearerFormat: 'JWT',
    description: "An access token of this service's identity provider (POST /oauth/token, client credentials) whose aud includes svc-data-api and whose scope names the endpoint (data-api:<endpoint> or data-api:*); docs/data-api.md.",
  },
  catalogToken: { type: 'http', scheme: 'bearer', description: 'The static catalog.auth_token (administration of the embedded catalog).' },
  policyToken: { type: 'http', scheme: 'bearer', description: 'policy_service.auth_token when set (HTTP Basic with the token as password also works); no credential when unset.' },
  clientSecretBasic: {
    type: 'http', scheme: 'basic',
    description: 'OAuth client authentication (client_secret_basic); client_secret_post sends client_id and client_secret in the form instead.',
  },
} as const;

const ANONYMOUS: Requirement = [];
const ANONYMOUS_PATHS = [
  /^\/$/, /^\/ui\//, /^\/healthz$/, /^\/readyz$/, /^\/metrics$/, /^\/\.well-known\//, /^\/api\/auth\/(config|login)$/,
  /^\/api\/auth\/oidc\/(login|callback|backchannel-logout)$/, /^\/oauth\/authorize$/,
  // The webhook's key is a path segment ({key}); OpenAPI cannot name a path segment as a credential.
  /\/executions\/webhook\//,
];

/** Who may call an operation, by route family. */
export function securityOf(method: string, path: string): Requirement {
  if (ANONYMOUS_PATHS.some((re) => re.test(path))) return ANONYMOUS;
  if (path === '/oauth/token') return [{ clientSecretBasic: [] }, {}];
  if (path.startsWith('/catalog/')) return [{ bearerJwt: [] }, { catalogToken: [] }];
  if (path.startsWith('/service/')) return [{ policyToken: [] }, {}];
  if (path.startsWith('/data-api/')) return [{ dataApiToken: [] }];
  return method === 'get' || method === 'head' ? [{ session: [] }] : [{ session: [], csrf: [] }];
}

const pascal = (s: string) => s.split(/[^A-Za-z0-9]+/).filter(Boolean).map((w) => w[0].toUpperCase() + w.slice(1)).join('');

/** getWorkspacesConnectionsByWsAndName for GET /api/workspaces/{ws}/connections/{name}. */
export function operationIdOf(method: string, path: string): string {
  const segments = path.split('/').filter((s) => s && s !== 'api' && s !== 'v1');
  const statics = segments.filter((s) => !s.startsWith('{')).map(pascal).join('');
  const params = segments.filter((s) => s.startsWith('{')).map((s) => pascal(s.slice(1, -1)));
  return `${method}${statics || 'Root'}${params.length ? `By${params.join('And')}` : ''}`;
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

export function finishDocument({ openapiObject }: { openapiObject: Json }): Json {
  const doc = openapiObject as { paths?: Record<string, Record<string, Json>>; components?: Json; servers?: Json[]; info?: Json };
  const paths = doc.paths ?? {};
  if (paths['/ui/{*}']) {
    const ops = paths['/ui/{*}'];
    for (const op of Object.values(ops)) {
      for (const p of (op.parameters as Json[] | undefined) ?? []) if (p.name === '*') { p.name = 'path'; p.description = 'path of the asset under /ui/'; }
    }
    delete paths['/ui/{*}'];
    paths['/ui/{path}'] = ops;
  }
  // The catalog's plan id is `{plan-id}` in the Iceberg specification; a fastify route parameter
  // cannot carry a '-' (find-my-way reads it as a separator), so the route says `:planId`.
  for (const path of Object.keys(paths).filter((p) => p.includes('{planId}'))) {
    const ops = paths[path];
    for (const op of Object.values(ops)) for (const p of (op.parameters as Json[] | undefined) ?? []) if (p.name === 'planId') p.name = 'plan-id';
    delete paths[path];
    paths[path.replace('{planId}', '{plan-id}')] = ops;
  }
  const metrics = paths['/metrics']?.get as { responses?: Record<string, { content?: Json }> } | undefined;
  const ok = metrics?.responses?.['200'];
  if (ok?.content) ok.content = { 'text/plain; version=0.0.4': { schema: { type: 'string' } } };

  const seen = new Set<string>();
  for (const path of Object.keys(paths).sort()) {
    for (const method of METHODS) {
      const op = paths[path][method];
      if (!op) continue;
      // @fastify/swagger suffixes a HEAD route's own operationId with `-head` (meant for the HEAD
      // twin of a GET); an explicit HEAD route (the catalog's *Exists) keeps the id it declares.
      const declared = op.operationId as string | undefined;
      let id = (method === 'head' ? declared?.replace(/-head$/, '') : declared) ?? operationIdOf(method, path);
      for (let n = 2; seen.has(id); n++) id = `${operationIdOf(method, path)}${n}`;
      seen.add(id);
      op.operationId = id;
      if (!op.security) op.security = securityOf(method, path);
    }
  }
  doc.components = { ...doc.components, securitySchemes: SECURITY_SCHEMES };
  doc.servers = [{
    url: '{origin}',
    description: 'this svc service, at its browser-facing origin (catalog.public_url)',
    variables: { origin: { default: defaultConfig().catalog.public_url, description: 'scheme://host[:port] of the service, without a path' } },
  }];
  if (doc.info) doc.info.license = { name: 'Apache-2.0', identifier: 'Apache-2.0' };
  withIcebergSchemas(doc as Parameters<typeof withIcebergSchemas>[0]);
  return doc;
}
