// Platform administration: local users, groups, group members, the platform role of groups, and
// the audit log. Every route requires platform_admin; every change is a governance event.
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppContext } from '../context.js';
import { guard, requireUser } from '../plugins/auth.js';
import { changedSchema, groupSchema, iso, userSchema, apiErrors, bigintCursor } from '../schemas.js';
import { listUsers } from '../../identity/users.js';
import { listGroupMembers, listGroups, resolveGroupRef } from '../../identity/groups.js';
import { addGroupMember, createGroup, createUser, removeGroupMember, setGroupPlatformAdmin } from '../../access/governance.js';
import type { Actor } from '../../access/actor.js';
import { listAuditEvents } from '../../audit/retention.js';

export function actorOf(req: Parameters<typeof requireUser>[0]): Actor {
  const p = requireUser(req);
  const email = req.accessSnapshot?.user?.email ?? '';
  return { id: p.userId, email };
}

const groupParams = z.object({ group: z.string().min(1).max(255) });
const memberParams = z.object({ group: z.string().min(1).max(255), user: z.string().min(1).max(320) });

export function adminRoutes(ctx: AppContext): FastifyPluginAsyncZod {
  return async (app) => {
    const admin = guard(ctx, () => ({ platform: 'platform_admin' }));
    const errors = apiErrors;

    app.get('/api/users', {
      preHandler: admin,
      schema: { tags: ['admin'], summary: 'List users', response: { 200: z.object({ users: z.array(userSchema.extend({ created_at: z.string(), last_login_at: z.string().nullable() })) }), ...errors } },
    }, async () => {
      const users = await listUsers(ctx.services().db);
      return { users: users.map((u) => ({ ...u, created_at: u.created_at.toISOString(), last_login_at: iso(u.last_login_at) })) };
    });

    app.post('/api/users', {
      preHandler: admin,
      schema: {
        tags: ['admin'], summary: 'Create a local user',
        body: z.object({ email: z.string().min(3).max(320), password: z.string().min(8).max(1024), name: z.string().max(255).optional() }),
        response: { 201: userSchema, ...errors },
      },
    }, async (req, reply) => {
      const user = await createUser(ctx.services().db, actorOf(req), req.body);
      return reply.status(201).send(user);
    });

    app.get('/api/groups', {
      preHandler: admin,
      schema: { tags: ['admin'], summary: 'List groups (local and identity-provider)', response: { 200: z.object({ groups: z.array(groupSchema.extend({ platform_roles: z.array(z.string()), members: z.number(), created_at: z.string() })) }), ...errors } },
    }, async () => {
      const groups = await listGroups(ctx.services().db);
      return { groups: groups.map((g) => ({ ...g, created_at: g.created_at.toISOString() })) };
    });

    app.post('/api/groups', {
      preHandler: admin,
      schema: { tags: ['admin'], summary: 'Create a local group', body: z.object({ name: z.string().min(1).max(255) }), response: { 201: groupSchema, ...errors } },
    }, async (req, reply) => {
      const g = await createGroup(ctx.services().db, actorOf(req), req.body.name);
      return reply.status(201).send(g);
    });

    app.get('/api/groups/:group/members', {
      preHandler: admin,
      schema: {
        tags: ['admin'], summary: 'Members of a group (by id, or by name when unambiguous)', params: groupParams,
        response: { 200: z.object({ group: groupSchema, members: z.array(z.object({ id: z.string(), email: z.string(), name: z.string().nullable(), is_local: z.boolean(), added_at: z.string() })) }), ...errors },
      },
    }, async (req) => {
      const db = ctx.services().db;
      const group = await resolveGroupRef(db, req.params.group);
      const members = await listGroupMembers(db, group.id);
      return { group, members: members.map((m) => ({ ...m, added_at: m.added_at.toISOString() })) };
    });

    app.put('/api/groups/:group/members/:user', {
      preHandler: admin,
      schema: { tags: ['admin'], summary: 'Add a local user to a local group', params: memberParams, response: { 200: changedSchema, ...errors } },
    }, async (req) => {
      return { changed: await addGroupMember(ctx.services(), actorOf(req), req.params.group, req.params.user) };
    });

    app.delete('/api/groups/:group/members/:user', {
      preHandler: admin,
      schema: { tags: ['admin'], summary: 'Remove a local user from a local group', params: memberParams, response: { 200: changedSchema, ...errors } },
    }, async (req) => {
      return { changed: await removeGroupMember(ctx.services(), actorOf(req), req.params.group, req.params.user) };
    });

    for (const [method, granted] of [['put', true], ['delete', false]] as const) {
      app[method]('/api/groups/:group/platform-role', {
        preHandler: admin,
        schema: {
          tags: ['admin'], summary: granted ? 'Grant platform_admin to a group (unknown names become identity-provider groups)' : 'Revoke platform_admin from a group',
          params: groupParams, response: { 200: changedSchema, ...errors },
        },
      }, async (req) => {
        return { changed: await setGroupPlatformAdmin(ctx.services(), actorOf(req), req.params.group, granted) };
      });
    }

    app.get('/api/audit', {
      preHandler: admin,
      schema: {
        tags: ['admin'], summary: 'Audit events, newest first; page with `before` (the last id seen)',
        querystring: z.object({
          before: bigintCursor.optional(), limit: z.coerce.number().int().min(1).max(500).default(100), kind: z.enum(['authz', 'governance', 'auth']).optional(),
          /** Leaves out allowed reads (GET), which drown the rest. */
          hide_reads: z.enum(['true', 'false']).optional(),
        }),
        response: {
          200: z.object({
            events: z.array(z.object({
              id: z.string(), at: z.string(), kind: z.string(), action: z.string(), actor_id: z.string().nullable(), actor: z.string().nullable(),
              target: z.string().nullable(), workspace: z.string().nullable(), decision: z.string().nullable(), details: z.unknown(),
            })),
            next_before: z.string().nullable(),
          }),
          ...errors,
        },
      },
    }, async (req) => {
      const s = ctx.services();
      await s.audit.flush();
      const events = await listAuditEvents(s.db, { ...req.query, hideReads: req.query.hide_reads === 'true' });
      return {
        events: events.map((e) => ({ ...e, at: e.at.toISOString() })),
        next_before: events.length === req.query.limit ? events[events.length - 1].id : null,
      };
    });
  };
}
