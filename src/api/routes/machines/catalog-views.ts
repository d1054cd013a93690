// Iceberg REST view routes under /catalog/v1/{prefix}: list, create, load, HEAD, replace (commit),
// drop and rename. Access as for tables: viewers read, editors create and replace, admins drop.
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppContext } from '../../context.js';
import { catalogErrors, checkTargetPolicies, nameParam, namespaceParam, prefixParam, scope } from './catalog-common.js';
import { loadResultText, sendJson, storageConfig } from './catalog-tables.js';
import { checkName, checkNamespace, parseNamespace } from '../../../catalog/names.js';
import { dropTable, getTable, listTables, renameTable } from '../../../catalog/tables.js';
import { commitView, createView } from '../../../catalog/views.js';
import type { Json } from '../../../catalog/metadata.js';

const tags = ['catalog'];
const loose = (description: string) => z.looseObject({}).meta({ description });
const pNs = z.object({ prefix: prefixParam, namespace: namespaceParam });
const pView = z.object({ prefix: prefixParam, namespace: namespaceParam, view: nameParam });
const identifier = z.object({ namespace: z.array(z.string()), name: z.string() });
const loadResult = loose('LoadViewResult: metadata-location, metadata, config');

export function catalogViewRoutes(ctx: AppContext): FastifyPluginAsyncZod {
  return async (app) => {
    const base = '/catalog/v1/:prefix/namespaces/:namespace/views';

    app.get(base, {
      config: { csrf: false },
      schema: { operationId: 'listViews',
        tags, summary: 'List the views of a namespace, by pages (Iceberg REST listViews)', params: pNs,
        querystring: z.object({ pageToken: z.string().max(8192).optional(), pageSize: z.coerce.number().int().optional() }),
        response: { 200: z.object({ identifiers: z.array(identifier), 'next-page-token': z.string().optional() }), ...catalogErrors },
      },
    }, async (req) => {
      const { s, wh } = await scope(ctx, req, req.params.prefix, 'read', 'listing views');
      return listTables(s.db, wh, parseNamespace(req.params.namespace), 'view', req.query.pageToken, req.query.pageSize);
    });

    app.post(base, {
      config: { csrf: false },
      schema: { operationId: 'createView', tags, summary: 'Create a view (Iceberg REST createView)', params: pNs, body: loose('CreateViewRequest'), response: { 200: loadResult, ...catalogErrors } },
    }, async (req, reply) => {
      const { s, wh, caller } = await scope(ctx, req, req.params.prefix, 'write', 'creating a view', { namespace: req.params.namespace, name: (req.body as Json).name, op: 'create' });
      const v = await createView(s, wh, caller, parseNamespace(req.params.namespace), req.body as Json);
      return sendJson(reply, 200, loadResultText(v.location, v.text, storageConfig(s)));
    });

    app.get(`${base}/:view`, {
      config: { csrf: false }, exposeHeadRoute: false,
      schema: { operationId: 'loadView', tags, summary: 'Load a view (Iceberg REST loadView)', params: pView, response: { 200: loadResult, ...catalogErrors } },
    }, async (req, reply) => {
      const { s, wh } = await scope(ctx, req, req.params.prefix, 'read', 'loading a view', { namespace: req.params.namespace, name: req.params.view, op: 'read' });
      const row = await getTable(s.db, wh, parseNamespace(req.params.namespace), checkName(req.params.view), 'view');
      return sendJson(reply, 200, loadResultText(row.metadata_location, row.metadata, storageConfig(s)));
    });

    app.head(`${base}/:view`, {
      config: { csrf: false, swagger: { exposeHeadRoute: true } },
      schema: { operationId: 'viewExists', tags, summary: 'Whether a view exists: 204 or 404 (Iceberg REST viewExists)', params: pView, response: { 204: z.null(), ...catalogErrors } },
    }, async (req, reply) => {
      const { s, wh } = await scope(ctx, req, req.params.prefix, 'read', 'checking a view', { namespace: req.params.namespace, name: req.params.view, op: 'read' });
      await getTable(s.db, wh, parseNamespace(req.params.namespace), checkName(req.params.view), 'view');
      return reply.status(204).send(null);
    });

    app.post(`${base}/:view`, {
      config: { csrf: false },
      schema: { operationId: 'replaceView', tags, summary: 'Replace a view: assert-view-uuid and view updates, compare-and-swap (Iceberg REST replaceView)', params: pView, body: loose('CommitViewRequest'), response: { 200: loadResult, ...catalogErrors } },
    }, async (req, reply) => {
      const { s, wh } = await scope(ctx, req, req.params.prefix, 'write', 'replacing a view', { namespace: req.params.namespace, name: req.params.view, op: 'commit' });
      const v = await commitView(s, wh, parseNamespace(req.params.namespace), checkName(req.params.view), req.body as Json);
      return sendJson(reply, 200, loadResultText(v.location, v.text, storageConfig(s)));
    });

    app.delete(`${base}/:view`, {
      config: { csrf: false },
      schema: { operationId: 'dropView', tags, summary: 'Drop a view (Iceberg REST dropView)', params: pView, response: { 204: z.null(), ...catalogErrors } },
    }, async (req, reply) => {
      const { s, wh, caller } = await scope(ctx, req, req.params.prefix, 'manage', 'dropping a view', { namespace: req.params.namespace, name: req.params.view, op: 'drop' });
      await dropTable(s, wh, caller, parseNamespace(req.params.namespace), checkName(req.params.view), 'view', false);
      return reply.status(204).send(null);
    });

    app.post('/catalog/v1/:prefix/views/rename', {
      config: { csrf: false },
      schema: { operationId: 'renameView', tags, summary: 'Rename or move a view (Iceberg REST renameView)', params: z.object({ prefix: prefixParam }), body: z.object({ source: identifier, destination: identifier }), response: { 204: z.null(), ...catalogErrors } },
    }, async (req, reply) => {
      const sc = await scope(ctx, req, req.params.prefix, 'write', 'renaming a view');
      const id = (x: { namespace: string[]; name: string }) => ({ namespace: checkNamespace(x.namespace), name: checkName(x.name) });
      const [from, to] = [id(req.body.source), id(req.body.destination)];
      await checkTargetPolicies(sc, from.namespace, from.name, 'rename');
      await checkTargetPolicies(sc, to.namespace, to.name, 'create');
      await renameTable(sc.s, sc.wh, sc.caller, 'view', from, to);
      return reply.status(204).send(null);
    });
  };
}
