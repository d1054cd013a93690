// The embedded catalog's HTTP surface: the gate on every /catalog/* request and the Iceberg REST
// `GET /catalog/v1/config`. The routes are always declared (so `svc openapi` documents them), but
// with catalog.enabled false they are "not mounted": every /catalog/* request gets exactly the
// answer of an unknown route.
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.js';
import { errorBody } from '../../errors.js';
import { authenticateCatalog, CatalogAuthError, type CatalogPrincipal } from '../../../catalog/gate.js';
import { catalogConfig } from '../../../catalog/config.js';

/** Iceberg REST ErrorModel inside IcebergErrorResponse. */
const icebergError = z.object({ error: z.object({ message: z.string(), type: z.string(), code: z.number().int() }) });
const iceberg = (code: number, type: string, message: string) => ({ error: { message, type, code } });

const principals = new WeakMap<FastifyRequest, CatalogPrincipal>();
/** Who passed the gate, for catalog handlers. */
export function catalogPrincipal(req: FastifyRequest): CatalogPrincipal | undefined { return principals.get(req); }

export function catalogRoutes(ctx: AppContext): FastifyPluginAsyncZod {
  return async (app) => {
    app.addHook('onRequest', async (req, reply) => {
      const s = ctx.services();
      if (!s.config.catalog.enabled) {
        return reply.status(404).send(errorBody(404, `no route for ${req.method} ${req.url.split('?')[0]}`));
      }
      try {
        principals.set(req, await authenticateCatalog(s, req.headers.authorization));
      } catch (err) {
        if (!(err instanceof CatalogAuthError)) throw err;
        reply.header('www-authenticate', err.presented ? 'Bearer realm="svc-catalog", error="invalid_token"' : 'Bearer realm="svc-catalog"');
        return reply.status(401).send(iceberg(401, 'NotAuthorizedException', err.message));
      }
    });

    app.get('/catalog/v1/config', {
      config: { csrf: false },
      schema: {
        tags: ['catalog'],
        summary: 'Iceberg REST catalog configuration (mounted with catalog.enabled); bearer JWT with aud oidc.catalog_audience, or catalog.auth_token',
        querystring: z.object({ warehouse: z.string().max(1024).optional() }),
        response: {
          200: z.object({ defaults: z.record(z.string(), z.string()), overrides: z.record(z.string(), z.string()) }),
          401: icebergError,
          404: z.object({ error: z.string(), message: z.string() }),
        },
      },
    }, async (req) => catalogConfig(ctx.services().config, req.query.warehouse));

    // Other catalog paths pass the same gate, then are unknown.
    app.all('/catalog/*', { config: { csrf: false }, schema: { hide: true } }, async (req, reply) => {
      return reply.status(404).send(iceberg(404, 'NotFoundException', `no catalog route for ${req.method} ${req.url.split('?')[0]}`));
    });
  };
}
