// The policy service (policy_service.enabled): a read-only API under /service/ shaped like Apache
// Ranger's plugin API, polled by engine plugins, and its administration under /api/ for workspace
// administrators. With the switch off, every one of these routes answers exactly as an unknown
// route (not mounted); `svc openapi` still documents them.
// Plugin API authentication: with policy_service.auth_token empty it is open (read-only, keep it
// off the internet); with a token set, `Authorization: Bearer <token>` (or HTTP Basic with the
// token as password, which Ranger's REST client can send) is required, else 401.
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.js';
import { errorBody } from '../../errors.js';
import { errorSchema, apiErrors } from '../../schemas.js';
import { guard } from '../../plugins/auth.js';
import { actorOf } from '../admin.js';
import { bearerToken, secretEquals } from '../../../catalog/gate.js';
import {
  createPolicy, createTag, deletePolicy, deleteTag, downloadPolicies, downloadTags, listPolicies, listTags,
  rangerServiceList, serviceVersions, updatePolicy, type PolicyView, type TagView,
} from '../../../policy/policies.js';
import { downloadGds, downloadRoles, downloadUserStore, listPlugins, recordPoll } from '../../../policy/plugin-feed.js';
import type { Db } from '../../../db/index.js';
import { ACCESS_TYPES, MASK_TYPES, RESOURCES } from '../../../policy/service-def.js';

function presentedToken(authorization: string | undefined): string | null {
  const bearer = bearerToken(authorization);
  if (bearer) return bearer;
  const m = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(authorization ?? '');
  if (!m) return null;
  const decoded = Buffer.from(m[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon >= 0 ? decoded.slice(colon + 1) : null;
}

const notMounted = (req: FastifyRequest, reply: FastifyReply) =>
  reply.status(404).send(errorBody(404, `no route for ${req.method} ${req.url.split('?')[0]}`));

const rangerLoose = z.looseObject({}).meta({ description: 'Apache Ranger JSON' });
const serviceParams = z.object({ service: z.string().min(1).max(63) });
const downloadQuery = z.looseObject({
  lastKnownVersion: z.coerce.number().int().optional().meta({ description: 'the version the plugin holds; equal to the current one: 304 with no body' }),
  lastActivationTime: z.coerce.number().int().optional().meta({ description: 'when the plugin activated what it holds (ms since the epoch)' }),
  pluginId: z.string().optional(),
  clusterName: z.string().optional(),
  supportsPolicyDeltas: z.string().optional().meta({ description: 'accepted; the answer is always the full set' }),
  supportsTagDeltas: z.string().optional(),
  pluginCapabilities: z.string().optional(),
});

/** The plugin API: /service/... */
function pluginApi(ctx: AppContext): FastifyPluginAsyncZod {
  return async (app) => {
    app.addHook('onRequest', async (req, reply) => {
      const cfg = ctx.services().config.policy_service;
      if (!cfg.enabled) return notMounted(req, reply);
      if (cfg.auth_token === '') return;
      const token = presentedToken(req.headers.authorization);
      if (token !== null && secretEquals(token, cfg.auth_token)) return;
      reply.header('www-authenticate', 'Bearer realm="svc-policy"');
      return reply.status(401).send(errorBody(401, token === null
        ? 'the policy service requires its token: send Authorization: Bearer <policy_service.auth_token>'
        : 'wrong policy service token'));
    });

    const errors = { 401: errorSchema, 404: errorSchema };

    app.get('/service/plugins/services', {
      schema: { tags: ['policy service'], summary: 'Policy services (one per workspace), as Ranger\'s RangerServiceList', response: { 200: rangerLoose, ...errors } },
    }, async () => rangerServiceList(ctx.services().db));

    // Every download alike (the plain and the `secure` path of RangerAdminRESTClient): 304 when the
    // plugin already holds the current version; each poll records what the plugin holds.
    const lastKnown = (q: Record<string, unknown>, key: string) => (typeof q[key] === 'number' ? q[key] as number : undefined);
    const downloads = [
      ['/service/plugins/policies/download/:service', '/service/plugins/secure/policies/download/:service', 'Policies of a service as Ranger\'s ServicePolicies (full, never deltas); 304 when lastKnownVersion is current', 'lastKnownVersion', 'policy',
        (db: Db, svc: string, v: number | undefined) => downloadPolicies(db, svc, v)],
      ['/service/tags/download/:service', '/service/tags/secure/download/:service', 'Resource tags of a service as Ranger\'s ServiceTags; 304 when lastKnownVersion is current', 'lastKnownVersion', 'tag',
        (db: Db, svc: string, v: number | undefined) => downloadTags(db, svc, v)],
      ['/service/roles/download/:service', '/service/roles/secure/download/:service', 'Roles as Ranger\'s RangerRoles: the workspace roles ws_viewer, ws_editor, ws_admin with their users and groups; 304 when lastKnownRoleVersion is current', 'lastKnownRoleVersion', 'role',
        (db: Db, svc: string, v: number | undefined) => downloadRoles(db, svc, v)],
      ['/service/xusers/download/:service', '/service/xusers/secure/download/:service', 'User store (unused here): an empty RangerUserStore, 304 once the plugin holds it', 'lastKnownUserStoreVersion', null,
        async (_db: Db, svc: string, v: number | undefined) => downloadUserStore(svc, v)],
      ['/service/gds/download/:service', '/service/gds/secure/download/:service', 'Governed data sharing (unused here): an empty ServiceGdsInfo, 304 once the plugin holds it', 'lastKnownGdsVersion', null,
        async (_db: Db, svc: string, v: number | undefined) => downloadGds(svc, v)],
    ] as const;
    for (const [plain, secure, summary, versionParam, kind, download] of downloads) {
      for (const url of [plain, secure]) {
        app.get(url, {
          schema: {
            tags: ['policy service'], summary, params: serviceParams, querystring: downloadQuery.extend({ [versionParam]: z.coerce.number().int().optional() }),
            response: {
              200: rangerLoose, 304: z.null().meta({ description: 'not modified' }), 401: errorSchema,
              // a service that does not exist answers Ranger's message; with policy_service.enabled
              // false the route itself is not there, answered in the service's own shape
              404: z.union([
                z.string().meta({ description: 'the service does not exist: Ranger\'s message as a JSON string, "RANGER_ERROR_SERVICE_NOT_FOUND: ServiceName=<service>"' }),
                errorSchema,
              ]),
            },
          },
        }, async (req, reply) => {
          const s = ctx.services();
          const q = req.query as Record<string, unknown>;
          const d = await download(s.db, req.params.service, lastKnown(q, versionParam));
          // Ranger's own answer for a service it does not know, word for word: the plugin drops its
          // cached policies only when the 404 body starts with it (RangerServiceNotFoundException).
          if (d.kind === 'unknown') return reply.status(404).type('application/json').send(JSON.stringify(rangerServiceNotFound(req.params.service)));
          if (kind && typeof q.pluginId === 'string' && q.pluginId !== '') {
            await recordPoll(s.db, {
              service: req.params.service, pluginId: q.pluginId.slice(0, 255), clusterName: typeof q.clusterName === 'string' ? q.clusterName.slice(0, 255) : undefined,
              kind, held: d.version, lastActivationTime: typeof q.lastActivationTime === 'number' ? q.lastActivationTime : undefined,
            }, s.clock.now());
          }
          if (d.kind === 'not_modified') return reply.status(304).send(null);
          return d.body;
        });
      }
    }
  };
}

/** Ranger's message for an unknown service (RangerServiceNotFoundException.buildExceptionMsg). */
export const rangerServiceNotFound = (service: string) => `RANGER_ERROR_SERVICE_NOT_FOUND: ServiceName=${service}`;

const resourcesSchema = z.object(Object.fromEntries(RESOURCES.map((r) => [r, z.array(z.string().min(1).max(1024)).min(1).max(1000).optional()])) as Record<(typeof RESOURCES)[number], z.ZodOptional<z.ZodArray<z.ZodString>>>)
  .strict().meta({ description: 'resource values per level (catalog > schema > table > column); `*` and `?` are wildcards' });
const principalsSchema = {
  users: z.array(z.string().min(1).max(255)).max(1000).optional(),
  groups: z.array(z.string().min(1).max(255)).max(1000).optional(),
  roles: z.array(z.string().min(1).max(255)).max(1000).optional(),
};
const itemSchema = z.object({
  ...principalsSchema,
  accesses: z.array(z.enum(ACCESS_TYPES)).min(1),
  delegate_admin: z.boolean().optional(),
}).strict();
const maskSchema = z.object({
  ...principalsSchema,
  type: z.enum(MASK_TYPES.map((m) => m.name) as [string, ...string[]]),
  expression: z.string().max(4000).optional().meta({ description: 'CUSTOM only: a SQL expression, `{col}` is the column' }),
}).strict();
const rowFilterSchema = z.object({ ...principalsSchema, filter: z.string().min(1).max(4000).meta({ description: 'a SQL boolean expression over the table' }) }).strict();
const policyBody = z.object({
  name: z.string().min(1).max(255),
  description: z.string().max(4000).optional(),
  is_enabled: z.boolean().optional(),
  resources: resourcesSchema,
  allow: z.array(itemSchema).max(100).optional(),
  deny: z.array(itemSchema).max(100).optional(),
  masks: z.array(maskSchema).max(100).optional().meta({ description: 'a column mask policy (resources down to column): who sees the column masked, and how' }),
  row_filters: z.array(rowFilterSchema).max(100).optional().meta({ description: 'a row filter policy (resources down to table): who sees only the rows the filter keeps' }),
}).strict();
const itemOut = z.object({ users: z.array(z.string()).optional(), groups: z.array(z.string()).optional(), roles: z.array(z.string()).optional(), accesses: z.array(z.string()), delegate_admin: z.boolean().optional() });
const policySchema = z.object({
  id: z.string(), guid: z.string(), name: z.string(), description: z.string(), is_enabled: z.boolean(),
  resources: z.record(z.string(), z.array(z.string())),
  allow: z.array(itemOut), deny: z.array(itemOut),
  masks: z.array(maskSchema), row_filters: z.array(rowFilterSchema),
  version: z.number(), created_at: z.string(), updated_at: z.string(),
});
const tagSchema = z.object({ id: z.string(), guid: z.string(), type: z.string(), attributes: z.record(z.string(), z.string()), resources: z.record(z.string(), z.array(z.string())), created_at: z.string() });
const pView = (p: PolicyView) => ({ ...p, created_at: p.created_at.toISOString(), updated_at: p.updated_at.toISOString() });
const tView = (t: TagView) => ({ ...t, created_at: t.created_at.toISOString() });

/** Administration: /api/workspaces/{ws}/policies and /tags (ws_admin). */
function adminApi(ctx: AppContext): FastifyPluginAsyncZod {
  return async (app) => {
    app.addHook('onRequest', async (req, reply) => {
      if (!ctx.services().config.policy_service.enabled) return notMounted(req, reply);
    });
    const wsAdmin = guard(ctx, (req) => ({ workspace: (req.params as { ws: string }).ws, role: 'ws_admin' }));
    const errors = apiErrors;
    const ws = z.object({ ws: z.string().min(1).max(63) });
    const wsId = z.object({ ws: z.string().min(1).max(63), id: z.string().min(1).max(20) });
    const service = z.object({ name: z.string(), policy_version: z.number(), tag_version: z.number() });

    app.get('/api/workspaces/:ws/policies', {
      preHandler: wsAdmin,
      schema: { tags: ['policy service'], summary: 'Access policies of the workspace\'s policy service', params: ws, response: { 200: z.object({ service, policies: z.array(policySchema) }), ...errors } },
    }, async (req) => {
      const db = ctx.services().db;
      return { service: await serviceVersions(db, req.params.ws), policies: (await listPolicies(db, req.params.ws)).map(pView) };
    });

    app.post('/api/workspaces/:ws/policies', {
      preHandler: wsAdmin,
      schema: { tags: ['policy service'], summary: 'Create an access policy (bumps the policy version)', params: ws, body: policyBody, response: { 201: policySchema.extend({ policy_version: z.number() }), ...errors } },
    }, async (req, reply) => {
      const s = ctx.services();
      const p = await createPolicy(s.db, actorOf(req), req.params.ws, req.body, s.clock.now());
      return reply.status(201).send({ ...pView(p), policy_version: p.policy_version });
    });

    app.put('/api/workspaces/:ws/policies/:id', {
      preHandler: wsAdmin,
      schema: { tags: ['policy service'], summary: 'Replace an access policy (bumps the policy version)', params: wsId, body: policyBody, response: { 200: policySchema.extend({ policy_version: z.number() }), ...errors } },
    }, async (req) => {
      const s = ctx.services();
      const p = await updatePolicy(s.db, actorOf(req), req.params.ws, req.params.id, req.body, s.clock.now());
      return { ...pView(p), policy_version: p.policy_version };
    });

    app.delete('/api/workspaces/:ws/policies/:id', {
      preHandler: wsAdmin,
      schema: { tags: ['policy service'], summary: 'Delete an access policy (bumps the policy version)', params: wsId, response: { 200: z.object({ policy_version: z.number() }), ...errors } },
    }, async (req) => {
      const s = ctx.services();
      return { policy_version: await deletePolicy(s.db, actorOf(req), req.params.ws, req.params.id, s.clock.now()) };
    });

    app.get('/api/workspaces/:ws/policy-plugins', {
      preHandler: wsAdmin,
      schema: {
        tags: ['policy service'], summary: 'Engine plugins polling this workspace\'s policy service: last poll, versions held, how far behind', params: ws,
        response: {
          200: z.object({
            service,
            plugins: z.array(z.object({
              plugin_id: z.string(), cluster_name: z.string(), last_poll_at: z.string(), last_activation_time: z.string().nullable(),
              policy_version_held: z.number().nullable(), tag_version_held: z.number().nullable(), role_version_held: z.number().nullable(),
              policies_behind: z.number().nullable(), tags_behind: z.number().nullable(), lagging: z.boolean(),
            })),
          }),
          ...errors,
        },
      },
    }, async (req) => {
      const db = ctx.services().db;
      const current = await serviceVersions(db, req.params.ws);
      return { service: current, plugins: await listPlugins(db, req.params.ws, current) };
    });

    app.get('/api/workspaces/:ws/tags', {
      preHandler: wsAdmin,
      schema: { tags: ['policy service'], summary: 'Resource tags of the workspace\'s policy service', params: ws, response: { 200: z.object({ service, tags: z.array(tagSchema) }), ...errors } },
    }, async (req) => {
      const db = ctx.services().db;
      return { service: await serviceVersions(db, req.params.ws), tags: (await listTags(db, req.params.ws)).map(tView) };
    });

    app.post('/api/workspaces/:ws/tags', {
      preHandler: wsAdmin,
      schema: {
        tags: ['policy service'], summary: 'Tag resources (bumps the tag version)', params: ws,
        body: z.object({ type: z.string().min(1).max(255), attributes: z.record(z.string(), z.string().max(4000)).optional(), resources: resourcesSchema }).strict(),
        response: { 201: tagSchema.extend({ tag_version: z.number() }), ...errors },
      },
    }, async (req, reply) => {
      const s = ctx.services();
      const t = await createTag(s.db, actorOf(req), req.params.ws, req.body, s.clock.now());
      return reply.status(201).send({ ...tView(t), tag_version: t.tag_version });
    });

    app.delete('/api/workspaces/:ws/tags/:id', {
      preHandler: wsAdmin,
      schema: { tags: ['policy service'], summary: 'Remove a tag (bumps the tag version)', params: wsId, response: { 200: z.object({ tag_version: z.number() }), ...errors } },
    }, async (req) => {
      const s = ctx.services();
      return { tag_version: await deleteTag(s.db, actorOf(req), req.params.ws, req.params.id, s.clock.now()) };
    });
  };
}

export function policyRoutes(ctx: AppContext): FastifyPluginAsyncZod {
  return async (app) => {
    await app.register(pluginApi(ctx));
    await app.register(adminApi(ctx));
  };
}
