// Database and storage connections of a workspace: members list them, ws_admin creates and
// deletes them. The secret goes in sealed and never comes out through the API (`has_secret`).
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppContext } from '../../context.js';
import { guard } from '../../plugins/auth.js';
import { actorOf } from '../admin.js';
import { errorSchema } from '../../schemas.js';
import { machines } from '../../../idp/state.js';
import { createConnection, deleteConnection, getConnection, listConnections, type ConnectionView } from '../../../secrets/connections.js';

const connectionSchema = z.object({
  name: z.string(),
  kind: z.enum(['database', 'storage']),
  config: z.record(z.string(), z.unknown()),
  has_secret: z.boolean(),
  created_at: z.string(),
});
const view = (c: ConnectionView) => ({ ...c, created_at: c.created_at.toISOString() });
const wsParams = z.object({ ws: z.string().min(1).max(63) });
const oneParams = z.object({ ws: z.string().min(1).max(63), name: z.string().min(1).max(63) });

export function connectionRoutes(ctx: AppContext): FastifyPluginAsyncZod {
  return async (app) => {
    const member = guard(ctx, (req) => ({ workspace: (req.params as { ws: string }).ws, role: 'ws_viewer' }));
    const wsAdmin = guard(ctx, (req) => ({ workspace: (req.params as { ws: string }).ws, role: 'ws_admin' }));
    const errors = { 400: errorSchema, 401: errorSchema, 403: errorSchema, 404: errorSchema, 409: errorSchema, 503: errorSchema };

    app.get('/api/workspaces/:ws/connections', {
      preHandler: member,
      schema: { tags: ['connections'], summary: 'Connections of the workspace (secrets are never returned)', params: wsParams, response: { 200: z.object({ connections: z.array(connectionSchema) }), ...errors } },
    }, async (req) => ({ connections: (await listConnections(ctx.services().db, req.params.ws)).map(view) }));

    app.post('/api/workspaces/:ws/connections', {
      preHandler: wsAdmin,
      schema: {
        tags: ['connections'], summary: 'Register a database or storage connection; its secret is sealed with secrets.master_key',
        params: wsParams,
        body: z.object({
          name: z.string().min(1).max(63),
          kind: z.enum(['database', 'storage']),
          config: z.record(z.string(), z.unknown()).optional().meta({ description: 'non-secret settings (host, port, bucket, ...)' }),
          secret: z.union([z.string().max(65536), z.record(z.string(), z.string().max(65536))]).optional()
            .meta({ description: 'a password or a map of credentials; stored sealed, never returned' }),
        }).strict(),
        response: { 201: connectionSchema, ...errors },
      },
    }, async (req, reply) => {
      const s = ctx.services();
      const c = await createConnection(s.db, machines(s).sealer, actorOf(req), req.params.ws, req.body);
      return reply.status(201).send(view(c));
    });

    app.get('/api/workspaces/:ws/connections/:name', {
      preHandler: member,
      schema: { tags: ['connections'], summary: 'One connection (without its secret)', params: oneParams, response: { 200: connectionSchema, ...errors } },
    }, async (req) => view(await getConnection(ctx.services().db, req.params.ws, req.params.name)));

    app.delete('/api/workspaces/:ws/connections/:name', {
      preHandler: wsAdmin,
      schema: { tags: ['connections'], summary: 'Delete a connection and its sealed secret', params: oneParams, response: { 204: z.null(), ...errors } },
    }, async (req, reply) => {
      await deleteConnection(ctx.services().db, actorOf(req), req.params.ws, req.params.name);
      return reply.status(204).send(null);
    });
  };
}
