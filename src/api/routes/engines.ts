// Query engines of a workspace (issue 13; docs/engines.md). Thin: records what is wanted and
// enqueues; the engines worker provisions.
//   ws_viewer, ws_editor: list and read (and run queries, src/queries)   ws_admin: manage
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { FastifyRequest } from 'fastify';
import type { AppContext } from '../context.js';
import { guard } from '../plugins/auth.js';
import { actorOf } from './admin.js';
import { apiErrors, iso } from '../schemas.js';
import { notFound } from '../../errors.js';
import { findWorkspace } from '../../workspaces/workspaces.js';
import { idpIssuer } from '../../config/index.js';
import type { EngineRow } from '../../db/engine-types.js';
import { ENGINE_KINDS, PINNED } from '../../engines/images.js';
import { createEngine, findEngine, getEngineRow, listEngines, provisionerOf, requestEngine } from '../../engines/engines.js';
import { explainEngine } from '../../engines/explain.js';

const errors = apiErrors;
const wsParam = z.object({ ws: z.string().min(1).max(63) });
const engineParams = wsParam.extend({ name: z.string().min(1).max(40) });
const kind = z.enum(ENGINE_KINDS as ['trino', 'olap']);
const engineBody = z.object({
  name: z.string().min(1).max(40),
  kind,
  version: z.string().min(1).max(64).optional(),
  image: z.string().min(1).max(512).optional(),
  resources: z.object({ cpu: z.string().max(16).optional(), memory: z.string().max(16).optional() }).strict().optional(),
}).strict();

const engineView = z.object({
  id: z.string(), name: z.string(), kind, version: z.string().nullable(), image: z.string(),
  resources: z.object({ cpu: z.string(), memory: z.string() }), provisioner: z.string(),
  state: z.enum(['provisioning', 'running', 'stopping', 'stopped', 'failed']), desired: z.enum(['running', 'stopped', 'deleted']),
  endpoint_url: z.string().nullable(), error: z.string().nullable(), oauth_client_id: z.string().nullable(),
  config_hash: z.string(), running_config_hash: z.string().nullable(),
  /** provisioned under another idp.issuer: its tokens no longer validate the way it expects */
  issuer_changed: z.boolean(), warnings: z.array(z.string()),
  created_at: z.string(), updated_at: z.string(), state_changed_at: z.string(),
});

const explainView = z.object({
  action: z.enum(['create', 'replace', 'unchanged']), provisioner: z.string(),
  image: z.object({ image: z.string(), repository: z.string(), tag: z.string().nullable(), digest: z.string().nullable(), version: z.string().nullable(), pinned_by: z.enum(['version', 'digest']) }),
  resources: z.object({ cpu: z.string(), memory: z.string() }), labels: z.record(z.string(), z.string()), config_dir: z.string(),
  files: z.record(z.string(), z.string()), config_hash: z.string(), running_config_hash: z.string().nullable(), diff: z.array(z.string()),
});

export function engineRoutes(ctx: AppContext): FastifyPluginAsyncZod {
  return async (app) => {
    const need = (role: 'ws_viewer' | 'ws_admin') => guard(ctx, (req) => ({ workspace: (req.params as { ws: string }).ws, role }));
    const viewer = need('ws_viewer'); const admin = need('ws_admin');
    const workspace = async (req: FastifyRequest) => {
      const slug = (req.params as { ws: string }).ws;
      const ws = await findWorkspace(ctx.services().db, slug);
      if (!ws) throw notFound(`workspace does not exist: ${slug}`);
      return ws;
    };
    const view = (e: EngineRow): z.infer<typeof engineView> => {
      const issuer = idpIssuer(ctx.services().config);
      const issuerChanged = e.idp_issuer !== issuer;
      const warnings: string[] = [];
      if (issuerChanged) warnings.push(`provisioned under idp.issuer ${e.idp_issuer}; it is now ${issuer}: start the engine again (stop, start) to re-wire it`);
      if (e.state === 'running' && e.running_config_hash && e.running_config_hash !== e.config_hash) warnings.push('the running configuration differs from the rendered one');
      return {
        id: e.id, name: e.name, kind: e.kind, version: e.version, image: e.image, resources: e.resources, provisioner: e.provisioner,
        state: e.state, desired: e.desired, endpoint_url: e.endpoint_url, error: e.error, oauth_client_id: e.oauth_client_id,
        config_hash: e.config_hash, running_config_hash: e.running_config_hash, issuer_changed: issuerChanged, warnings,
        created_at: e.created_at.toISOString(), updated_at: e.updated_at.toISOString(), state_changed_at: iso(e.state_changed_at)!,
      };
    };

    app.get('/api/workspaces/:ws/engines', {
      preHandler: viewer,
      schema: {
        tags: ['engines'], summary: 'Engines of the workspace, the provisioner in use and the pinned versions', params: wsParam,
        response: { 200: z.object({
          engines: z.array(engineView),
          provisioner: z.object({ name: z.enum(['cluster', 'local_container', 'none']), reason: z.string() }),
          kinds: z.array(z.object({ kind, title: z.string(), default_version: z.string(), versions: z.array(z.string()) })),
        }), ...errors },
      },
    }, async (req) => {
      const ws = await workspace(req);
      const p = provisionerOf(ctx.services());
      return {
        engines: (await listEngines(ctx.services().db, ws.id)).map(view),
        provisioner: { name: p.provisioner, reason: p.reason },
        kinds: ENGINE_KINDS.map((k) => ({ kind: k, title: PINNED[k].title, default_version: PINNED[k].default_version, versions: PINNED[k].versions.map((v) => v.version) })),
      };
    });

    app.post('/api/workspaces/:ws/engines', {
      preHandler: admin,
      schema: { tags: ['engines'], summary: 'Add an engine: recorded as provisioning and queued', params: wsParam, body: engineBody, response: { 201: engineView, ...errors } },
    }, async (req, reply) => {
      const ws = await workspace(req);
      const row = await createEngine(ctx.services(), actorOf(req), ws, req.body);
      return reply.status(201).send(view(row));
    });

    app.post('/api/workspaces/:ws/engines/explain', {
      preHandler: admin,
      schema: { tags: ['engines'], summary: 'What adding (or changing) the engine would provision, without doing it', params: wsParam, body: engineBody, response: { 200: explainView, ...errors } },
    }, async (req) => {
      const ws = await workspace(req);
      // explain diffs against the engine of that name when there is one; nothing runs yet otherwise
      const existing = await getEngineRow(ctx.services().db, ws.id, req.body.name);
      return explainEngine(ctx.services(), ws, req.body, existing);
    });

    app.get('/api/workspaces/:ws/engines/:name', {
      preHandler: viewer,
      schema: { tags: ['engines'], summary: 'One engine', params: engineParams, response: { 200: engineView, ...errors } },
    }, async (req) => view(await findEngine(ctx.services().db, (await workspace(req)).id, req.params.name)));

    for (const action of ['stop', 'start'] as const) {
      app.post(`/api/workspaces/:ws/engines/:name/${action}`, {
        preHandler: admin,
        schema: { tags: ['engines'], summary: action === 'stop' ? 'Stop an engine (kept, can start again)' : 'Start a stopped or failed engine', params: engineParams, response: { 202: engineView, ...errors } },
      }, async (req, reply) => {
        const ws = await workspace(req);
        return reply.status(202).send(view(await requestEngine(ctx.services(), ws.id, req.params.name, action)));
      });
    }

    app.delete('/api/workspaces/:ws/engines/:name', {
      preHandler: admin,
      schema: { tags: ['engines'], summary: 'Delete an engine: stopped, its objects and OAuth client removed', params: engineParams, response: { 202: engineView, ...errors } },
    }, async (req, reply) => {
      const ws = await workspace(req);
      return reply.status(202).send(view(await requestEngine(ctx.services(), ws.id, req.params.name, 'delete')));
    });
  };
}
