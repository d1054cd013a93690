// Iceberg REST namespace routes under /catalog/v1/{prefix}/namespaces.
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppContext } from '../../context.js';
import { catalogErrors, namespaceParam, prefixParam, scope } from './catalog-common.js';
import { checkNamespace, checkLevel, parseNamespace } from '../../../catalog/names.js';
import {
  checkProperties, createNamespace, dropNamespace, getNamespace, listNamespaces, updateNamespaceProperties,
} from '../../../catalog/namespaces.js';
import { badRequest } from '../../../catalog/errors.js';

const tags = ['catalog'];
const props = z.record(z.string(), z.string());
const nsOut = z.object({ namespace: z.array(z.string()), properties: props });
const p1 = z.object({ prefix: prefixParam });
const p2 = z.object({ prefix: prefixParam, namespace: namespaceParam });

export function catalogNamespaceRoutes(ctx: AppContext): FastifyPluginAsyncZod {
  return async (app) => {
    app.get('/catalog/v1/:prefix/namespaces', {
      config: { csrf: false }, exposeHeadRoute: false,
      schema: { operationId: 'listNamespaces',
        tags, summary: 'List namespaces, or the children of `parent` (Iceberg REST listNamespaces)', params: p1,
        querystring: z.object({ parent: z.string().max(4400).optional(), pageToken: z.string().max(8192).optional(), pageSize: z.coerce.number().int().optional() }),
        response: { 200: z.object({ namespaces: z.array(z.array(z.string())), 'next-page-token': z.string().optional() }), ...catalogErrors },
      },
    }, async (req) => {
      const { s, wh } = await scope(ctx, req, req.params.prefix, 'read', 'listing namespaces');
      const parent = req.query.parent ? parseNamespace(req.query.parent) : undefined;
      return listNamespaces(s.db, wh, parent, req.query.pageToken, req.query.pageSize);
    });

    app.post('/catalog/v1/:prefix/namespaces', {
      config: { csrf: false },
      schema: { operationId: 'createNamespace',
        tags, summary: 'Create a namespace; a nested one needs its parent (Iceberg REST createNamespace)', params: p1,
        body: z.looseObject({ namespace: z.array(z.string()).max(16), properties: z.record(z.string(), z.unknown()).optional() }),
        response: { 200: nsOut, ...catalogErrors },
      },
    }, async (req) => {
      const { s, wh, caller } = await scope(ctx, req, req.params.prefix, 'write', 'creating a namespace');
      return createNamespace(s.db, wh, caller, checkNamespace(req.body.namespace), checkProperties(req.body.properties));
    });

    app.get('/catalog/v1/:prefix/namespaces/:namespace', {
      config: { csrf: false }, exposeHeadRoute: false,
      schema: { operationId: 'loadNamespaceMetadata', tags, summary: 'Load a namespace\'s properties (Iceberg REST loadNamespaceMetadata)', params: p2, response: { 200: nsOut, ...catalogErrors } },
    }, async (req) => {
      const { s, wh } = await scope(ctx, req, req.params.prefix, 'read', 'loading a namespace');
      const ns = await getNamespace(s.db, wh, parseNamespace(req.params.namespace));
      return { namespace: ns.levels, properties: ns.properties };
    });

    app.head('/catalog/v1/:prefix/namespaces/:namespace', {
      config: { csrf: false, swagger: { exposeHeadRoute: true } },
      schema: { operationId: 'namespaceExists', tags, summary: 'Whether a namespace exists: 204 or 404 (Iceberg REST namespaceExists)', params: p2, response: { 204: z.null(), ...catalogErrors } },
    }, async (req, reply) => {
      const { s, wh } = await scope(ctx, req, req.params.prefix, 'read', 'checking a namespace');
      await getNamespace(s.db, wh, parseNamespace(req.params.namespace));
      return reply.status(204).send(null);
    });

    app.delete('/catalog/v1/:prefix/namespaces/:namespace', {
      config: { csrf: false },
      schema: { operationId: 'dropNamespace', tags, summary: 'Drop a namespace; refused (409) while it holds namespaces, tables or views', params: p2, response: { 204: z.null(), ...catalogErrors } },
    }, async (req, reply) => {
      const { s, wh, caller } = await scope(ctx, req, req.params.prefix, 'manage', 'dropping a namespace');
      await dropNamespace(s.db, wh, caller, parseNamespace(req.params.namespace));
      return reply.status(204).send(null);
    });

    app.post('/catalog/v1/:prefix/namespaces/:namespace/properties', {
      config: { csrf: false },
      schema: { operationId: 'updateProperties',
        tags, summary: 'Set and remove namespace properties (Iceberg REST updateProperties)', params: p2,
        body: z.looseObject({ removals: z.array(z.string().max(1024)).max(1000).optional(), updates: z.record(z.string(), z.unknown()).optional() }),
        response: { 200: z.object({ updated: z.array(z.string()), removed: z.array(z.string()), missing: z.array(z.string()).optional() }), ...catalogErrors },
      },
    }, async (req) => {
      const { s, wh } = await scope(ctx, req, req.params.prefix, 'manage', 'changing namespace properties');
      const removals = req.body.removals ?? [];
      for (const k of removals) checkLevel(k, 'property key');
      if (!req.body.removals && !req.body.updates) throw badRequest('nothing to do: send removals or updates');
      return updateNamespaceProperties(s.db, wh, parseNamespace(req.params.namespace), removals, checkProperties(req.body.updates, 'updates'), s.clock.now());
    });
  };
}
