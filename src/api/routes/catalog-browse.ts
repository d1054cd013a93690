// The catalog as the console reads it (issue 17 point 5; docs/catalog.md "Browsing"): read-only
// session routes under /api/workspaces/{ws}/catalog. A session cannot pass the catalog gate
// (bearer JWT or catalog.auth_token only), so these routes make the same decision for the
// signed-in person: the workspace role (requireRight, through a caller built for the person) and
// the policies on each name (requirePolicies); listings leave out what a policy hides and a hidden
// name is 403, whether it exists or not. Namespaces are levels joined by the unit separator 0x1F
// (%1F), as in the Iceberg paths.
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { FastifyRequest } from 'fastify';
import type { AppContext } from '../context.js';
import { guard, requireUser } from '../plugins/auth.js';
import { apiErrors } from '../schemas.js';
import { DomainError, notFound, type ErrorCode } from '../../errors.js';
import { personCaller, requirePolicies, requireRight, type CatalogCaller } from '../../catalog/access.js';
import { describeTable, describeView, mayRead } from '../../catalog/browse.js';
import { IcebergError } from '../../catalog/errors.js';
import { parseJson } from '../../catalog/json.js';
import type { Json } from '../../catalog/metadata.js';
import { checkName, parseNamespace } from '../../catalog/names.js';
import { getNamespace, listNamespaces } from '../../catalog/namespaces.js';
import { getTable, listTables, type Kind } from '../../catalog/tables.js';
import { findWarehouse, type Warehouse } from '../../catalog/warehouse.js';
import type { Services } from '../../services.js';

const tags = ['catalog-browse'];
const ws = z.string().min(1).max(63);
const namespace = z.string().min(1).max(4400).meta({ description: 'namespace levels joined by the unit separator 0x1F (%1F)' });
const pWs = z.object({ ws });
const pNs = z.object({ ws, namespace });
const pTable = z.object({ ws, namespace, name: z.string().min(1).max(255) });
const page = z.object({
  page_token: z.string().max(8192).optional().describe('next_page_token of the previous page'),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
});
const nsItem = z.object({ namespace: z.array(z.string()), name: z.string().describe('the levels joined by "."') });
const column = z.object({ id: z.number().nullable(), name: z.string(), type: z.string(), required: z.boolean(), doc: z.string().nullable() });
const schemaView = z.object({ schema_id: z.number().nullable(), columns: z.array(column) });
const props = z.record(z.string(), z.string());

const tableView = z.object({
  namespace: z.array(z.string()), name: z.string(), metadata_location: z.string(),
  table_uuid: z.string().nullable(), format_version: z.number().nullable(), location: z.string().nullable(),
  last_updated: z.string().nullable(), current_snapshot_id: z.string().nullable(), schema: schemaView,
  partition_spec: z.object({ spec_id: z.number().nullable(), fields: z.array(z.object({ name: z.string(), transform: z.string(), source_id: z.number().nullable(), source: z.string().nullable(), field_id: z.number().nullable() })) }),
  sort_order: z.object({ order_id: z.number().nullable(), fields: z.array(z.object({ transform: z.string(), source_id: z.number().nullable(), source: z.string().nullable(), direction: z.string(), null_order: z.string() })) }),
  properties: props,
  snapshots: z.array(z.object({
    snapshot_id: z.string(), parent_id: z.string().nullable(), sequence_number: z.string().nullable(), timestamp: z.string().nullable(),
    operation: z.string().nullable(), summary: props, schema_id: z.number().nullable(),
  })).describe('newest first, at most 200'),
  snapshots_total: z.number(),
  refs: z.array(z.object({ name: z.string(), type: z.string(), snapshot_id: z.string() })),
});

const viewView = z.object({
  namespace: z.array(z.string()), name: z.string(), metadata_location: z.string(),
  view_uuid: z.string().nullable(), format_version: z.number().nullable(), location: z.string().nullable(),
  version_id: z.number().nullable(), versions: z.number(), timestamp: z.string().nullable(),
  default_namespace: z.array(z.string()), default_catalog: z.string().nullable(), summary: props,
  representations: z.array(z.object({ dialect: z.string(), sql: z.string() })), schema: schemaView, properties: props,
});

const CODES: Record<number, ErrorCode> = { 400: 'bad_request', 403: 'forbidden', 404: 'not_found', 409: 'conflict' };
/** The catalog domain speaks Iceberg errors; /api answers {error, message}. */
async function asApi<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    // The domain names the Iceberg query parameter; these routes call it page_token.
    if (err instanceof IcebergError) throw new DomainError(CODES[err.status] ?? 'bad_request', err.message.replace(/\bpageToken\b/, 'page_token'));
    throw err;
  }
}

interface Scope { s: Services; caller: CatalogCaller; wh: Warehouse }

export function catalogBrowseRoutes(ctx: AppContext): FastifyPluginAsyncZod {
  return async (app) => {
    const viewer = guard(ctx, (req) => ({ workspace: (req.params as { ws: string }).ws, role: 'ws_viewer' }));
    /** The person's right to read the warehouse (as the catalog routes decide it), then the warehouse. */
    const scope = async (req: FastifyRequest, slug: string, what: string): Promise<Scope> => {
      const s = ctx.services();
      if (!s.config.catalog.enabled) throw notFound('the catalog is not enabled on this service (catalog.enabled)');
      const user = req.accessSnapshot?.user;
      if (!user) throw notFound(`no such user: ${requireUser(req).userId}`);
      const caller = personCaller(s, user, user.sub ? [user.sub] : []);
      await requireRight(caller, slug, 'read', what);
      return { s, caller, wh: await findWarehouse(s, slug) };
    };
    const visibleNamespace = async (sc: Scope, raw: string): Promise<string[]> => {
      const levels = parseNamespace(raw);
      await requirePolicies(sc.s, sc.caller, sc.wh.slug, levels, undefined, 'read');
      await getNamespace(sc.s.db, sc.wh, levels);
      return levels;
    };
    const members = (kind: Kind) => async (req: FastifyRequest) => asApi(async () => {
      const params = req.params as z.infer<typeof pNs>;
      const query = req.query as z.infer<typeof page>;
      const sc = await scope(req, params.ws, `listing ${kind}s`);
      const levels = await visibleNamespace(sc, params.namespace);
      const found = await listTables(sc.s.db, sc.wh, levels, kind, query.page_token, query.limit);
      const names = [];
      for (const id of found.identifiers) if (await mayRead(sc.s, sc.caller, sc.wh.slug, levels, id.name)) names.push(id.name);
      return { namespace: levels, names, next_page_token: found['next-page-token'] ?? null };
    });
    const load = async (req: FastifyRequest, kind: Kind) => {
      const params = req.params as z.infer<typeof pTable>;
      const sc = await scope(req, params.ws, `reading a ${kind}`);
      const levels = parseNamespace(params.namespace);
      const name = checkName(params.name, `${kind} name`);
      await requirePolicies(sc.s, sc.caller, sc.wh.slug, levels, name, 'read');
      const row = await getTable(sc.s.db, sc.wh, levels, name, kind);
      return { namespace: levels, name, metadata_location: row.metadata_location, metadata: parseJson(row.metadata) as Json };
    };

    app.get('/api/workspaces/:ws/catalog/namespaces', {
      preHandler: viewer,
      schema: {
        tags, summary: 'Namespaces of the workspace\'s warehouse, or the children of `parent`, by pages; those a policy hides from the caller are left out',
        params: pWs, querystring: page.extend({ parent: namespace.optional() }),
        response: { 200: z.object({ namespaces: z.array(nsItem), next_page_token: z.string().nullable() }), ...apiErrors },
      },
    }, async (req) => asApi(async () => {
      const sc = await scope(req, req.params.ws, 'listing namespaces');
      const parent = req.query.parent === undefined ? undefined : await visibleNamespace(sc, req.query.parent);
      const found = await listNamespaces(sc.s.db, sc.wh, parent, req.query.page_token, req.query.limit);
      const namespaces = [];
      for (const levels of found.namespaces) if (await mayRead(sc.s, sc.caller, sc.wh.slug, levels)) namespaces.push({ namespace: levels, name: levels.join('.') });
      return { namespaces, next_page_token: found['next-page-token'] ?? null };
    }));

    app.get('/api/workspaces/:ws/catalog/namespaces/:namespace', {
      preHandler: viewer,
      schema: { tags, summary: 'A namespace and its properties', params: pNs, response: { 200: z.object({ namespace: z.array(z.string()), name: z.string(), properties: props }), ...apiErrors } },
    }, async (req) => asApi(async () => {
      const sc = await scope(req, req.params.ws, 'loading a namespace');
      const levels = await visibleNamespace(sc, req.params.namespace);
      const ns = await getNamespace(sc.s.db, sc.wh, levels);
      return { namespace: levels, name: levels.join('.'), properties: ns.properties };
    }));

    const listed = z.object({ namespace: z.array(z.string()), names: z.array(z.string()), next_page_token: z.string().nullable() });
    app.get('/api/workspaces/:ws/catalog/namespaces/:namespace/tables', {
      preHandler: viewer,
      schema: { tags, summary: 'Names of the tables of a namespace, by pages; those a policy hides from the caller are left out', params: pNs, querystring: page, response: { 200: listed, ...apiErrors } },
    }, members('table'));

    app.get('/api/workspaces/:ws/catalog/namespaces/:namespace/views', {
      preHandler: viewer,
      schema: { tags, summary: 'Names of the views of a namespace, by pages; those a policy hides from the caller are left out', params: pNs, querystring: page, response: { 200: listed, ...apiErrors } },
    }, members('view'));

    app.get('/api/workspaces/:ws/catalog/namespaces/:namespace/tables/:name', {
      preHandler: viewer,
      schema: { tags, summary: 'A table: current schema, partition spec, sort order, properties, snapshots with their summary, refs', params: pTable, response: { 200: tableView, ...apiErrors } },
    }, async (req) => asApi(async () => {
      const t = await load(req, 'table');
      return { namespace: t.namespace, name: t.name, metadata_location: t.metadata_location, ...describeTable(t.metadata) };
    }));

    app.get('/api/workspaces/:ws/catalog/namespaces/:namespace/views/:name', {
      preHandler: viewer,
      schema: { tags, summary: 'A view: its SQL (current version), schema and properties', params: pTable, response: { 200: viewView, ...apiErrors } },
    }, async (req) => asApi(async () => {
      const v = await load(req, 'view');
      return { namespace: v.namespace, name: v.name, metadata_location: v.metadata_location, ...describeView(v.metadata) };
    }));
  };
}
