// The embedded catalog's HTTP surface: the gate on every /catalog/* request, the Iceberg REST
// error shape for everything under it, `GET /catalog/v1/config`, and the namespace, table, view
// and scan planning routes (catalog-*.ts). The routes are always declared (so `svc openapi` documents them),
// but with catalog.enabled false they are "not mounted": every /catalog/* request gets exactly the
// answer of an unknown route.
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { FastifyError } from 'fastify';
import type { AppContext } from '../../context.js';
import { errorBody } from '../../errors.js';
import { DomainError, UNAVAILABLE_RETRY_AFTER_SECS, unreachableDependency } from '../../../errors.js';
import { authenticateCatalog, CatalogAuthError } from '../../../catalog/gate.js';
import { catalogConfig } from '../../../catalog/config.js';
import { IcebergError, badRequest, unprocessable } from '../../../catalog/errors.js';
import { finishKey, takeKey, UUID_RE } from '../../../catalog/idempotency.js';
import { requireRight } from '../../../catalog/access.js';
import { findWarehouse } from '../../../catalog/warehouse.js';
import { callerOf, catalogErrors, catalogPrincipal, setCatalogPrincipal } from './catalog-common.js';
import { catalogNamespaceRoutes } from './catalog-namespaces.js';
import { catalogTableRoutes } from './catalog-tables.js';
import { catalogViewRoutes } from './catalog-views.js';
import { catalogScanRoutes } from './catalog-scan.js';
import { parseJson } from '../../../catalog/json.js';

export { catalogPrincipal } from './catalog-common.js';

const iceberg = (code: number, type: string, message: string) => ({ error: { message, type, code } });
const TYPES: Record<number, string> = {
  400: 'BadRequestException', 401: 'NotAuthorizedException', 403: 'ForbiddenException', 404: 'NotFoundException',
  405: 'BadRequestException', 406: 'BadRequestException', 409: 'AlreadyExistsException', 413: 'BadRequestException',
  415: 'BadRequestException', 422: 'UnprocessableEntityException', 429: 'SlowDownException', 503: 'ServiceUnavailableException',
};

export function catalogRoutes(ctx: AppContext): FastifyPluginAsyncZod {
  return async (app) => {
    app.addHook('onRequest', async (req, reply) => {
      const s = ctx.services();
      if (!s.config.catalog.enabled) {
        // Not the routes' declared (Iceberg) 404 shape: bypass their serializer.
        return reply.status(404).type('application/json; charset=utf-8').serializer(JSON.stringify)
          .send(errorBody(404, `no route for ${req.method} ${req.url.split('?')[0]}`));
      }
      try {
        setCatalogPrincipal(req, await authenticateCatalog(s, req.headers.authorization));
      } catch (err) {
        if (!(err instanceof CatalogAuthError)) throw err;
        reply.header('www-authenticate', err.presented ? 'Bearer realm="svc-catalog", error="invalid_token"' : 'Bearer realm="svc-catalog"');
        return reply.status(401).send(iceberg(401, 'NotAuthorizedException', err.message));
      }
    });

    // Catalog requests in /metrics by the specification's operation id (each route's schema names
    // it; the catch-all is `unknown`) and status: bounded labels, never a name from the path.
    app.addHook('onResponse', async (req, reply) => {
      const s = ctx.services();
      if (!s.config.catalog.enabled) return;
      const labels = { operation: (req.routeOptions.schema as { operationId?: string } | undefined)?.operationId ?? 'unknown', status: String(reply.statusCode) };
      s.metrics.catalogRequests.inc(labels);
      s.metrics.catalogDuration.observe(labels, reply.elapsedTime / 1000);
    });

    // Every answer under /catalog is an IcebergErrorResponse, a client's mistake never a 500.
    app.setErrorHandler((err: FastifyError, req, reply) => {
      if (err instanceof IcebergError) {
        // every 503 tells the client when to come back (a plan stopped or failed on an outage, a full replica)
        if (err.status === 503 && !reply.hasHeader('retry-after')) reply.header('retry-after', String(UNAVAILABLE_RETRY_AFTER_SECS));
        return reply.status(err.status).send(err.body());
      }
      if (err.validation) {
        const first = err.validation[0];
        const path = first?.instancePath ? ` at ${first.instancePath.replace(/^\//, '').replace(/\//g, '.')}` : '';
        return reply.status(400).send(iceberg(400, 'BadRequestException', `invalid ${err.validationContext ?? 'request'}${path}: ${first?.message ?? err.message}`));
      }
      const status = err instanceof DomainError ? err.status : err.statusCode ?? 500;
      if (status >= 400 && status < 500) return reply.status(status).send(iceberg(status, TYPES[status] ?? 'BadRequestException', err.message));
      const dependency = unreachableDependency(err);
      if (dependency) {
        req.log.warn({ dependency, err: err.message }, `${dependency} cannot be reached: answered 503`);
        return reply.status(503).header('retry-after', String(UNAVAILABLE_RETRY_AFTER_SECS))
          .send(iceberg(503, 'ServiceUnavailableException', 'temporarily unavailable; retry shortly'));
      }
      req.log.error({ err }, 'catalog request failed');
      return reply.status(500).send(iceberg(500, 'ServerErrorException', 'internal error'));
    });

    app.get('/catalog/v1/config', {
      config: { csrf: false },
      schema: { operationId: 'getConfig',
        tags: ['catalog'],
        summary: 'Iceberg REST catalog configuration (mounted with catalog.enabled): `warehouse` names a workspace, `overrides.prefix` is the path prefix; bearer JWT with aud oidc.catalog_audience, or catalog.auth_token',
        querystring: z.object({ warehouse: z.string().max(1024).optional() }),
        response: {
          200: z.object({
            defaults: z.record(z.string(), z.string()), overrides: z.record(z.string(), z.string()),
            endpoints: z.array(z.string()), 'idempotency-key-lifetime': z.string(),
          }),
          ...catalogErrors,
        },
      },
    }, async (req) => {
      const s = ctx.services();
      const caller = await callerOf(s, req);
      const principal = catalogPrincipal(req);
      const named = req.query.warehouse && req.query.warehouse !== '' ? req.query.warehouse : (principal?.kind === 'token' ? principal.workspace : null);
      if (!named) throw badRequest('name the warehouse: the `warehouse` parameter is a workspace slug');
      await requireRight(caller, named, 'read', 'using the warehouse');
      const wh = await findWarehouse(s, named);
      return catalogConfig(wh.slug, wh.root);
    });

    // Idempotency-Key: a stored final answer of the same mutation is replayed (idempotency.ts).
    const keyed = new WeakMap<object, { workspaceId: string; key: string; operation: string }>();
    app.addHook('preHandler', async (req, reply) => {
      const raw = req.headers['idempotency-key'];
      if (raw === undefined || !['POST', 'DELETE'].includes(req.method)) return;
      const key = Array.isArray(raw) ? raw[0] : raw;
      if (!UUID_RE.test(key)) throw badRequest('Idempotency-Key must be a UUID');
      const prefix = (req.params as { prefix?: string }).prefix;
      if (!prefix) return;
      const s = ctx.services();
      await requireRight(await callerOf(s, req), prefix, 'read', 'using the warehouse');
      const wh = await findWarehouse(s, prefix);
      const operation = `${req.method} ${req.routeOptions.url ?? ''} ${req.url.split('?')[0]}`;
      const taken = await takeKey(s.db, wh.id, key, operation, () => s.clock.now(), (ms) => new Promise((r) => setTimeout(r, ms)));
      if (taken.action === 'conflict') throw unprocessable('Idempotency-Key was used for another operation');
      if (taken.action === 'busy') throw new IcebergError(409, 'CommitFailedException', 'Idempotency-Key: a request with this key is still running; retry with the same key later');
      if (taken.action === 'replay') {
        reply.header('idempotent-replayed', 'true');
        if (taken.answer.body === null) return reply.status(taken.answer.status).send(null);
        return reply.status(taken.answer.status).type('application/json; charset=utf-8').send(taken.answer.body);
      }
      keyed.set(req, { workspaceId: wh.id, key, operation });
    });
    app.addHook('onSend', async (req, reply, payload) => {
      const k = keyed.get(req);
      if (!k) return payload;
      keyed.delete(req);
      const body = typeof payload === 'string' && payload !== '' ? payload : null;
      const s = ctx.services();
      await finishKey(s.db, k.workspaceId, k.key, { operation: k.operation, status: reply.statusCode, body }, s.clock.now());
      return payload;
    });

    // Request bodies keep 64-bit integers (snapshot ids) exact; see catalog/json.ts.
    app.removeContentTypeParser('application/json');
    app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
      if (body === '') { done(null, undefined); return; }
      try {
        done(null, parseJson(body as string));
      } catch (err) {
        done(badRequest(`invalid JSON body: ${(err as Error).message}`), undefined);
      }
    });

    await app.register(catalogNamespaceRoutes(ctx));
    await app.register(catalogTableRoutes(ctx));
    await app.register(catalogViewRoutes(ctx));
    await app.register(catalogScanRoutes(ctx));

    // Other catalog paths pass the same gate, then are unknown.
    app.all('/catalog/*', { config: { csrf: false }, schema: { hide: true } }, async (req, reply) => {
      return reply.status(404).send(iceberg(404, 'NotFoundException', `no catalog route for ${req.method} ${req.url.split('?')[0]}`));
    });
  };
}
