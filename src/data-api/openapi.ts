// The generated OpenAPI 3.1 document of a workspace's Data API (`/data-api/{ws}/openapi.json`):
// servers[0].url is the public URL (data_api.public_url, else the idp issuer, else
// catalog.public_url), the security scheme is OAuth2 client credentials at `<public_url>/oauth/token`,
// and each endpoint the fetching token may call is a GET and a POST operation with typed
// parameters and a typed page of rows (the columns read at publication).
import type { Config } from '../config/index.js';
import type { QueryColumn } from '../queries/types.js';
import type { EndpointVersion } from './endpoints.js';
import type { ParamSpec } from './params.js';
import { MAX_STRING } from './params.js';
import { ALL_ENDPOINTS, dataApiPublicUrl, SCOPE_PREFIX, tokenEndpoint } from './consumer.js';
import { MAX_PAGE } from './call.js';

type Schema = Record<string, unknown>;

/** JSON Schema of a column of the engine's type; 64-bit integers and decimals travel as strings. */
export function columnSchema(type: string): Schema {
  const t = type.toUpperCase();
  let s: Schema;
  if (t === 'BOOLEAN') s = { type: 'boolean' };
  else if (/^(TINYINT|SMALLINT|INTEGER|UTINYINT|USMALLINT|UINTEGER|INT|INT4|INT2)$/.test(t)) s = { type: 'integer' };
  else if (/^(FLOAT|DOUBLE|REAL)$/.test(t)) s = { type: 'number' };
  else if (t === 'DATE') s = { type: 'string', format: 'date' };
  else if (t.startsWith('TIMESTAMP')) s = { type: 'string', format: 'date-time' };
  else if (/^(BIGINT|HUGEINT|UBIGINT|UHUGEINT|DECIMAL|NUMERIC|VARCHAR|TEXT|UUID|TIME|INTERVAL|CHAR)/.test(t)) s = { type: 'string' };
  else return { description: `engine type ${type}` };
  return { ...s, type: [s.type, 'null'], description: `engine type ${type}` };
}

function paramSchema(p: ParamSpec): Schema {
  const s: Schema = {};
  switch (p.type) {
    case 'integer': s.type = 'integer'; break;
    case 'number': s.type = 'number'; break;
    case 'boolean': s.type = 'boolean'; break;
    case 'date': s.type = 'string'; s.format = 'date'; break;
    case 'timestamp': s.type = 'string'; s.format = 'date-time'; break;
    case 'string': s.type = 'string'; s.maxLength = Math.min(p.max_length ?? MAX_STRING, MAX_STRING); if (p.enum) s.enum = p.enum; break;
  }
  if (p.minimum !== undefined) s.minimum = p.minimum;
  if (p.maximum !== undefined) s.maximum = p.maximum;
  if (p.default !== undefined) s.default = p.default;
  return s;
}

const opId = (method: string, name: string) => method + name.split(/[-_]/).filter(Boolean).map((w) => w[0].toUpperCase() + w.slice(1)).join('');

function pageSchema(columns: QueryColumn[] | null): Schema {
  const row: Schema = columns
    ? { type: 'object', properties: Object.fromEntries(columns.map((c) => [c.name, columnSchema(c.type)])), required: columns.map((c) => c.name) }
    : { type: 'object', additionalProperties: true };
  return {
    type: 'object',
    required: ['endpoint', 'version', 'meta', 'data', 'rows', 'limit', 'offset', 'next_offset', 'truncated'],
    properties: {
      endpoint: { type: 'string' }, version: { type: 'integer' },
      meta: { type: 'array', items: { type: 'object', required: ['name', 'type'], properties: { name: { type: 'string' }, type: { type: 'string' } } } },
      data: { type: 'array', items: row },
      rows: { type: 'integer' }, limit: { type: 'integer' }, offset: { type: 'integer' },
      next_offset: { type: ['integer', 'null'], description: 'offset of the next page; null on the last' },
      truncated: { type: 'boolean', description: 'the rows reached engine.max_rows: more exist that paging cannot reach' },
    },
  };
}

const ERROR = { $ref: '#/components/schemas/Error' };
const errorResponse = (description: string) => ({ description, content: { 'application/json': { schema: ERROR } } });

function operation(method: 'get' | 'post', e: EndpointVersion, maxRows: number): Schema {
  const common = [
    { name: 'limit', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: Math.min(MAX_PAGE, maxRows), default: Math.min(100, maxRows) }, description: 'rows per page' },
    { name: 'offset', in: 'query', required: false, schema: { type: 'integer', minimum: 0, maximum: maxRows, default: 0 }, description: 'rows to skip' },
    { name: 'version', in: 'query', required: false, schema: { type: 'integer', minimum: 1 }, description: `pin a version (latest: ${e.latest_version})` },
    { name: 'format', in: 'query', required: false, schema: { type: 'string', enum: ['json', 'csv', 'ndjson'], default: 'json' }, description: 'csv answers text/csv (a header row), ndjson application/x-ndjson (one object a line); Accept chooses too' },
  ];
  const own = e.params.map((p) => ({
    name: p.name, in: 'query', required: p.default === undefined, schema: paramSchema(p), ...(p.description ? { description: p.description } : {}),
  }));
  const op: Schema = {
    operationId: opId(method, e.name),
    summary: e.description || `Call ${e.name}`,
    tags: ['endpoints'],
    security: [{ oauth2: [`${SCOPE_PREFIX}${e.name}`] }, { oauth2: [ALL_ENDPOINTS] }],
    parameters: method === 'get' ? [...own, ...common] : common,
    responses: {
      200: {
        description: 'one page of rows',
        headers: { ETag: { schema: { type: 'string' } }, 'X-Data-API-Version': { schema: { type: 'integer' } } },
        // JSON only, so generated clients type the rows; format=csv and ndjson are described on the parameter.
        content: { 'application/json': { schema: pageSchema(e.columns) } },
      },
      304: { description: 'the copy named in If-None-Match is current' },
      400: errorResponse('a parameter is not valid (the message names it)'),
      401: errorResponse('no valid token of the Data API audience'),
      403: errorResponse('the token may not call this endpoint'),
      404: errorResponse('no such endpoint or version'),
      429: errorResponse('rate limited: see Retry-After'),
      503: errorResponse('the engine is busy or the query ran out of time'),
    },
  };
  if (method === 'post') {
    op.requestBody = {
      required: false,
      content: { 'application/json': { schema: { type: 'object', additionalProperties: false, properties: Object.fromEntries(e.params.map((p) => [p.name, paramSchema(p)])), required: e.params.filter((p) => p.default === undefined).map((p) => p.name) } } },
    };
  }
  return op;
}

export function dataApiDocument(cfg: Config, ws: string, endpoints: EndpointVersion[]): Schema {
  const base = dataApiPublicUrl(cfg);
  const paths: Record<string, Schema> = {};
  for (const e of endpoints) {
    paths[`/data-api/${ws}/${e.name}`] = { get: operation('get', e, cfg.engine.max_rows), post: operation('post', e, cfg.engine.max_rows) };
  }
  return {
    openapi: '3.1.0',
    info: { title: `Data API of workspace ${ws}`, version: String(endpoints.reduce((n, e) => n + e.latest_version, 0)), description: 'Published queries of the workspace; the document shows the endpoints the fetching token may call.' },
    servers: [{ url: base }],
    paths,
    components: {
      schemas: { Error: { type: 'object', required: ['error', 'message'], properties: { error: { type: 'string' }, message: { type: 'string' } } } },
      securitySchemes: {
        oauth2: {
          type: 'oauth2',
          description: 'Client credentials of a Data API client of this workspace (audience svc-data-api).',
          flows: {
            clientCredentials: {
              tokenUrl: tokenEndpoint(cfg),
              scopes: { [ALL_ENDPOINTS]: 'call every endpoint of the workspace', ...Object.fromEntries(endpoints.map((e) => [`${SCOPE_PREFIX}${e.name}`, `call ${e.name}`])) },
            },
          },
        },
      },
    },
  };
}
