// Machines: the service's own identity provider (token endpoint, discovery, keys), its OAuth
// clients, the catalog gate, the policy service and sealed connection secrets. Each family is an
// encapsulated plugin in routes/machines/.
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppContext } from '../context.js';
import { oauthRoutes } from './machines/oauth.js';
import { clientRoutes } from './machines/clients.js';
import { connectionRoutes } from './machines/connections.js';
import { catalogRoutes } from './machines/catalog.js';
import { policyRoutes } from './machines/policy.js';

export function machinesRoutes(ctx: AppContext): FastifyPluginAsyncZod {
  return async (app) => {
    await app.register(oauthRoutes(ctx));
    await app.register(clientRoutes(ctx));
    await app.register(connectionRoutes(ctx));
    await app.register(catalogRoutes(ctx));
    await app.register(policyRoutes(ctx));
  };
}
