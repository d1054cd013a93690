// OAuth clients of the machine identity provider, managed by a platform_admin. The secret is in
// the answer of create and rotate only; every change is a governance event.
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppContext } from '../../context.js';
import { guard } from '../../plugins/auth.js';
import { actorOf } from '../admin.js';
import { apiErrors } from '../../schemas.js';
import { createClient, deleteClient, GRANT_TYPES, listClients, rotateClientSecret, type ClientView } from '../../../idp/clients.js';
import { SIGNING_ALGS } from '../../../idp/keys.js';

const clientSchema = z.object({
  client_id: z.string(),
  name: z.string(),
  audiences: z.array(z.string()),
  scopes: z.array(z.string()).meta({ description: 'allowed scopes; empty: any well-formed scope' }),
  grant_types: z.array(z.string()),
  workspace: z.string().nullable(),
  token_signing_alg: z.enum(SIGNING_ALGS).meta({ description: 'algorithm of the client\'s access tokens' }),
  created_at: z.string(),
  secret_rotated_at: z.string(),
});
const withSecret = clientSchema.extend({ client_secret: z.string().meta({ description: 'shown this once; only a hash is stored' }) });

const view = (c: ClientView) => ({ ...c, created_at: c.created_at.toISOString(), secret_rotated_at: c.secret_rotated_at.toISOString() });
const params = z.object({ id: z.string().min(1).max(128) });

export function clientRoutes(ctx: AppContext): FastifyPluginAsyncZod {
  return async (app) => {
    const admin = guard(ctx, () => ({ platform: 'platform_admin' }));
    const errors = apiErrors;

    app.get('/api/clients', {
      preHandler: admin,
      schema: { tags: ['machine identity'], summary: 'OAuth clients of the machine identity provider', response: { 200: z.object({ clients: z.array(clientSchema) }), ...errors } },
    }, async () => ({ clients: (await listClients(ctx.services().db)).map(view) }));

    app.post('/api/clients', {
      preHandler: admin,
      schema: {
        tags: ['machine identity'], summary: 'Create an OAuth client; the answer holds its secret, shown this once',
        body: z.object({
          name: z.string().min(1).max(255),
          audiences: z.array(z.string().min(1).max(255)).min(1).max(50),
          scopes: z.array(z.string().min(1).max(255)).max(50).optional(),
          grant_types: z.array(z.enum(GRANT_TYPES)).min(1).optional().meta({ description: 'default: client_credentials only' }),
          workspace: z.string().min(1).max(63).nullable().optional(),
          token_signing_alg: z.enum(SIGNING_ALGS).optional().meta({ description: 'ES256 (default) or RS256, for engines whose JWT libraries expect RS256' }),
        }).strict(),
        response: { 201: withSecret, ...errors },
      },
    }, async (req, reply) => {
      const c = await createClient(ctx.services().db, actorOf(req), req.body);
      return reply.status(201).send({ ...view(c), client_secret: c.client_secret });
    });

    app.post('/api/clients/:id/rotate', {
      preHandler: admin,
      schema: { tags: ['machine identity'], summary: 'Replace a client\'s secret (the old one stops working at once)', params, response: { 200: withSecret, ...errors } },
    }, async (req) => {
      const c = await rotateClientSecret(ctx.services(), actorOf(req), req.params.id);
      return { ...view(c), client_secret: c.client_secret };
    });

    app.delete('/api/clients/:id', {
      preHandler: admin,
      schema: { tags: ['machine identity'], summary: 'Delete a client (tokens already issued stay valid until they expire)', params, response: { 204: z.null(), ...errors } },
    }, async (req, reply) => {
      await deleteClient(ctx.services(), actorOf(req), req.params.id);
      return reply.status(204).send(null);
    });
  };
}
