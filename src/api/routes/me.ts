// Who is signed in: the user, their groups, platform roles and workspaces with the role in each.
// Served from the access snapshot (cached briefly, cleared by every governance change).
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppContext } from '../context.js';
import { requireUser } from '../plugins/auth.js';
import { errorSchema, userSchema, workspaceRoleSchema } from '../schemas.js';
import { compiledSerializer } from '../serializers.js';
import { permissionsOf, type AccessSnapshot } from '../../access/access.js';
import { unauthorized } from '../../errors.js';

const meSchema = z.object({
  user: userSchema,
  groups: z.array(z.object({ name: z.string(), idp_managed: z.boolean() })),
  platform_roles: z.array(z.literal('platform_admin')),
  workspaces: z.array(z.object({ slug: z.string(), name: z.string(), role: workspaceRoleSchema, permissions: z.array(z.string()) })),
});

export function meRoutes(ctx: AppContext): FastifyPluginAsyncZod {
  return async (app) => {
    app.get('/api/me', {
      serializerCompiler: compiledSerializer,
      schema: { tags: ['auth'], summary: 'The signed-in user, groups, platform roles and workspaces', response: { 200: meSchema, 401: errorSchema } },
    }, async (req, reply) => {
      const p = requireUser(req);
      const snap = await ctx.services().access.forUser(p.userId);
      if (!snap.user) throw unauthorized('sign in required');
      let body = answers.get(snap);
      if (body === undefined) {
        body = serialize({
          user: snap.user,
          groups: snap.groups,
          platform_roles: snap.platformAdmin ? ['platform_admin' as const] : [],
          workspaces: [...snap.workspaces.entries()].sort(([a], [b]) => a.localeCompare(b))
            .map(([slug, role]) => ({ slug, name: snap.workspaceNames.get(slug) ?? slug, role, permissions: permissionsOf(role) })),
        });
        answers.set(snap, body);
      }
      return reply.type('application/json; charset=utf-8').send(body as never);
    });
  };
}

// The answer is a function of the access snapshot alone, which the access cache keeps and replaces
// on every governance change (and on expiry): so the serialised answer is kept beside the snapshot
// object it was made from and goes when it goes. Most requests then only resolve the session.
const serialize = compiledSerializer({ schema: meSchema, method: 'GET', url: '/api/me', httpStatus: '200' }) as (v: unknown) => string;
const answers = new WeakMap<AccessSnapshot, string>();
