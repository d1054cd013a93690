// Workspaces and their Members screen: platform_admin lists and creates workspaces and sets
// their feature switches; a workspace's members see it; its ws_admin manages group roles.
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppContext } from '../context.js';
import { guard } from '../plugins/auth.js';
import { actorOf } from './admin.js';
import { changedSchema, workspaceRoleSchema, workspaceSchema, workspaceView, apiErrors } from '../schemas.js';
import { createWorkspace, listWorkspaceMembers, removeWorkspaceGroup, setWorkspaceGroupRole, updateWorkspace } from '../../access/governance.js';
import { findWorkspace } from '../../workspaces/workspaces.js';
import { notFound } from '../../errors.js';

const wsParams = z.object({ ws: z.string().min(1).max(63) });
const wsGroupParams = z.object({ ws: z.string().min(1).max(63), group: z.string().min(1).max(255) });

export function workspaceRoutes(ctx: AppContext): FastifyPluginAsyncZod {
  return async (app) => {
    const platformAdmin = guard(ctx, () => ({ platform: 'platform_admin' }));
    const member = guard(ctx, (req) => ({ workspace: (req.params as { ws: string }).ws, role: 'ws_viewer' }));
    const wsAdmin = guard(ctx, (req) => ({ workspace: (req.params as { ws: string }).ws, role: 'ws_admin' }));
    const errors = apiErrors;

    app.get('/api/workspaces', {
      preHandler: platformAdmin,
      schema: { tags: ['workspaces'], summary: 'All workspaces', response: { 200: z.object({ workspaces: z.array(workspaceSchema) }), ...errors } },
    }, async () => {
      const rows = await ctx.services().db.selectFrom('workspaces').selectAll().orderBy('slug').execute();
      return { workspaces: rows.map(workspaceView) };
    });

    app.post('/api/workspaces', {
      preHandler: platformAdmin,
      schema: {
        tags: ['workspaces'], summary: 'Create a workspace',
        body: z.object({ slug: z.string().min(1).max(63), name: z.string().max(255).optional() }),
        response: { 201: workspaceSchema, ...errors },
      },
    }, async (req, reply) => {
      const ws = await createWorkspace(ctx.services().db, actorOf(req), req.body);
      return reply.status(201).send(workspaceView(ws));
    });

    app.get('/api/workspaces/:ws', {
      preHandler: member,
      schema: { tags: ['workspaces'], summary: 'One workspace and your role in it', params: wsParams, response: { 200: workspaceSchema.extend({ role: workspaceRoleSchema.nullable() }), ...errors } },
    }, async (req) => {
      const ws = await findWorkspace(ctx.services().db, req.params.ws);
      if (!ws) throw notFound(`workspace does not exist: ${req.params.ws}`);
      return { ...workspaceView(ws), role: req.accessSnapshot?.workspaces.get(ws.slug) ?? null };
    });

    app.patch('/api/workspaces/:ws', {
      preHandler: platformAdmin,
      schema: {
        tags: ['workspaces'], summary: 'Rename a workspace or set its feature switches', params: wsParams,
        body: z.object({ name: z.string().min(1).max(255).optional(), workflow_containers: z.boolean().optional(), workflow_plugins: z.boolean().optional() }).strict(),
        response: { 200: workspaceSchema, ...errors },
      },
    }, async (req) => {
      const ws = await updateWorkspace(ctx.services(), actorOf(req), req.params.ws, req.body);
      return workspaceView(ws);
    });

    // The feature switches alone, for the workspace's own ws_admin (issue 28: a script task failed
    // at run time asking for workflow_containers, which only a platform_admin could set, with no
    // screen). Renaming stays with PATCH /api/workspaces/{ws} (platform_admin).
    app.put('/api/workspaces/:ws/switches', {
      preHandler: wsAdmin,
      schema: {
        tags: ['workspaces'], summary: 'Set the workspace\'s feature switches (ws_admin)', params: wsParams,
        body: z.object({ workflow_containers: z.boolean().optional(), workflow_plugins: z.boolean().optional() }).strict(),
        response: { 200: workspaceSchema, ...errors },
      },
    }, async (req) => workspaceView(await updateWorkspace(ctx.services(), actorOf(req), req.params.ws, req.body)));

    app.get('/api/workspaces/:ws/members', {
      preHandler: wsAdmin,
      schema: {
        tags: ['workspaces'], summary: 'Groups (and bootstrap users) with a role in the workspace', params: wsParams,
        response: {
          200: z.object({
            groups: z.array(z.object({ id: z.string(), name: z.string(), idp_managed: z.boolean(), role: workspaceRoleSchema, granted_by: z.string().nullable(), granted_at: z.string() })),
            users: z.array(z.object({ id: z.string(), email: z.string(), role: workspaceRoleSchema, granted_by: z.string().nullable(), granted_at: z.string() })),
          }),
          ...errors,
        },
      },
    }, async (req) => {
      const m = await listWorkspaceMembers(ctx.services().db, req.params.ws);
      return {
        groups: m.groups.map((g) => ({ ...g, granted_at: g.granted_at.toISOString() })),
        users: m.users.map((u) => ({ ...u, granted_at: u.granted_at.toISOString() })),
      };
    });

    app.put('/api/workspaces/:ws/members/groups/:group', {
      preHandler: wsAdmin,
      schema: {
        tags: ['workspaces'], summary: 'Grant or change a group role in the workspace (unknown names become identity-provider groups)',
        params: wsGroupParams, body: z.object({ role: workspaceRoleSchema }),
        response: { 200: z.object({ change: z.enum(['created', 'updated', 'unchanged']) }), ...errors },
      },
    }, async (req) => {
      return { change: await setWorkspaceGroupRole(ctx.services(), actorOf(req), req.params.ws, req.params.group, req.body.role) };
    });

    app.delete('/api/workspaces/:ws/members/groups/:group', {
      preHandler: wsAdmin,
      schema: { tags: ['workspaces'], summary: 'Revoke a group role in the workspace', params: wsGroupParams, response: { 200: changedSchema, ...errors } },
    }, async (req) => {
      return { changed: await removeWorkspaceGroup(ctx.services(), actorOf(req), req.params.ws, req.params.group) };
    });
  };
}
