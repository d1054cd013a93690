// The apps resource (SPEC 8 apps.*, docs/apps.md): notebook apps of a workspace. ws_editor
// creates, edits the draft, publishes and deletes; ws_viewer lists and reads published versions.
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { FastifyRequest } from 'fastify';
import type { AppContext } from '../context.js';
import { guard, requireUser } from '../plugins/auth.js';
import { apiErrors, errorSchema, iso } from '../schemas.js';
import { DomainError, forbidden, notFound, unauthorized } from '../../errors.js';
import { appTickets } from '../apps-origin.js';
import { gatewayCall } from '../apps-gateway.js';
import { findWorkspace } from '../../workspaces/workspaces.js';
import { allows } from '../../access/access.js';
import { AppStore, MAX_SOURCE_BYTES } from '../../apps/apps.js';
import { queueAppStop } from '../../apps/pod-runtime.js';
import type { AppRow } from '../../db/app-types.js';
import { actorOf } from './admin.js';

const BASE = '/api/workspaces/:ws/apps';
const wsParam = z.object({ ws: z.string().min(1).max(63) });
const idParams = wsParam.extend({ id: z.string().uuid() });
const source = z.string().max(MAX_SOURCE_BYTES)
  .refine((s) => Buffer.byteLength(s) <= MAX_SOURCE_BYTES, { message: `must be at most ${MAX_SOURCE_BYTES} bytes` });

const app = z.object({
  id: z.string(), name: z.string(), description: z.string(), created_at: z.string(), draft_updated_at: z.string().nullable(),
  /** The version viewers run; null until the first publish. */
  published_version: z.number().nullable(), published_at: z.string().nullable(),
});

/** The app token a pod presents in X-Svc-App-Token (the proxy hands it over on every request). */
function podToken(req: FastifyRequest): string {
  const token = req.headers['x-svc-app-token'];
  if (typeof token !== 'string' || token.length === 0 || token.length > 256) throw unauthorized('an X-Svc-App-Token header is required');
  return token;
}

export function appRoutes(ctx: AppContext): FastifyPluginAsyncZod {
  return async (fastify) => {
    const ws = (req: FastifyRequest) => (req.params as { ws: string }).ws;
    const viewer = guard(ctx, (req) => ({ workspace: ws(req), role: 'ws_viewer' }));
    const editor = guard(ctx, (req) => ({ workspace: ws(req), role: 'ws_editor' }));
    const store = () => {
      const s = ctx.services();
      return new AppStore({ db: s.db, storage: s.storage, clock: s.clock });
    };
    const workspaceId = async (req: FastifyRequest) => {
      const w = await findWorkspace(ctx.services().db, ws(req));
      if (!w) throw notFound(`workspace does not exist: ${ws(req)}`);
      return w.id;
    };
    /** Viewers see published apps only; editors (and above) see drafts too. */
    const canEdit = (req: FastifyRequest) => {
      return allows(req.accessSnapshot!, { workspace: ws(req), role: 'ws_editor' });
    };
    const out = (a: AppRow, editing: boolean) => ({
      id: a.id, name: a.name, description: a.description, created_at: a.created_at.toISOString(),
      draft_updated_at: editing ? a.draft_updated_at.toISOString() : null,
      published_version: a.published_version, published_at: iso(a.published_at),
    });

    fastify.post(BASE, {
      preHandler: editor,
      schema: {
        tags: ['apps'], summary: 'Create an app with its first draft (ws_editor)', params: wsParam,
        body: z.object({
          name: z.string().min(1).max(63).regex(/^[a-z0-9][a-z0-9-]*$/, { message: 'app names are lower-case letters, digits and -' }),
          description: z.string().max(1_000).default(''),
          source: source.default(''),
        }).strict(),
        response: { 201: app, ...apiErrors },
      },
    }, async (req, reply) => {
      const a = await store().create(await workspaceId(req), requireUser(req).userId, req.body, { actor: actorOf(req), workspace: ws(req) });
      return reply.status(201).send(out(a, true));
    });

    fastify.get(BASE, {
      preHandler: viewer,
      schema: { tags: ['apps'], summary: 'Apps of the workspace: every one for editors, the published ones for viewers', params: wsParam, response: { 200: z.object({ apps: z.array(app) }), ...apiErrors } },
    }, async (req) => {
      const editing = canEdit(req);
      return { apps: (await store().list(await workspaceId(req), !editing)).map((a) => out(a, editing)) };
    });

    fastify.get(`${BASE}/:id`, {
      preHandler: viewer,
      schema: { tags: ['apps'], summary: 'One app (an unpublished one is 404 for a viewer)', params: idParams, response: { 200: app, ...apiErrors } },
    }, async (req) => {
      const editing = canEdit(req);
      return out(await store().get(await workspaceId(req), req.params.id, !editing), editing);
    });

    fastify.delete(`${BASE}/:id`, {
      preHandler: editor,
      schema: { tags: ['apps'], summary: 'Delete an app, its draft and every version (ws_editor)', params: idParams, response: { 204: z.null(), ...apiErrors } },
    }, async (req, reply) => {
      await store().delete(await workspaceId(req), req.params.id, { actor: actorOf(req), workspace: ws(req) });
      await queueAppStop(ctx.services(), req.params.id);
      return reply.status(204).send(null);
    });

    fastify.get(`${BASE}/:id/draft`, {
      preHandler: editor,
      schema: { tags: ['apps'], summary: 'The draft source (ws_editor)', params: idParams, response: { 200: z.object({ source: z.string() }), ...apiErrors, 410: errorSchema } },
    }, async (req) => ({ source: await store().draft(await workspaceId(req), req.params.id) }));

    fastify.put(`${BASE}/:id/draft`, {
      preHandler: editor,
      schema: { tags: ['apps'], summary: 'Replace the draft source (ws_editor)', params: idParams, body: z.object({ source }).strict(), response: { 200: app, ...apiErrors } },
    }, async (req) => out(await store().saveDraft(await workspaceId(req), req.params.id, req.body.source), true));

    // An edit pod saves the notebook back (docs/apps.md "Saving from an edit pod"). Its credential
    // is the edit session's app token, which the proxy hands it in X-Svc-App-Token: bound to one
    // person, workspace and app. No cookie is read, and the person's right to edit is read again.
    fastify.put('/api/apps/draft', {
      schema: {
        tags: ['apps'], summary: 'Replace the draft of the app an edit session is bound to (an edit pod, with that session\'s X-Svc-App-Token)',
        body: z.object({ source }).strict(), response: { 200: app, ...apiErrors },
      },
    }, async (req) => {
      const s = ctx.services();
      const b = await appTickets(s).resolve(podToken(req));
      if (!b) throw unauthorized('no app session: the app token has ended');
      if (b.mode !== 'edit') throw forbidden('only an edit session saves the draft');
      const snap = await s.access.forUser(b.userId);
      if (!snap.user || !allows(snap, { workspace: b.workspace, role: 'ws_editor' })) throw forbidden(`requires ws_editor in workspace ${b.workspace}`);
      return out(await store().saveDraft(b.workspaceId, b.appId, req.body.source), true);
    });

    // The query gateway for a pod (docs/apps.md "The query gateway"): a notebook kernel runs its
    // SQL server-side, reaching the service through apps.pod.callback_url with the session's
    // token; the same checks, rights and rate limit as POST /_svc/query on the apps origin.
    fastify.post('/api/apps/query', {
      schema: {
        tags: ['apps'], summary: 'Run SQL with the rights of the person an app session is bound to (an app pod, with that session\'s X-Svc-App-Token)',
        body: z.object({ sql: z.string(), params: z.unknown().optional(), engine: z.string().optional() }).strict(),
        response: {
          200: z.object({ columns: z.array(z.object({ name: z.string(), type: z.string() })), rows: z.array(z.array(z.unknown())), truncated: z.boolean() }),
          ...apiErrors, 410: errorSchema, 429: errorSchema, 503: errorSchema,
        },
      },
    }, async (req) => {
      const s = ctx.services();
      return gatewayCall(s, appTickets(s), podToken(req), req.body);
    });

    fastify.post(`${BASE}/:id/publish`, {
      preHandler: editor,
      schema: { tags: ['apps'], summary: 'Publish the draft as the next version, the one viewers run (ws_editor)', params: idParams, response: { 201: app, ...apiErrors, 410: errorSchema } },
    }, async (req, reply) => reply.status(201).send(out(await store().publish(await workspaceId(req), req.params.id), true)));

    fastify.get(`${BASE}/:id/versions/:version`, {
      preHandler: viewer,
      schema: {
        tags: ['apps'], summary: 'A published version\'s source', params: idParams.extend({ version: z.coerce.number().int().min(1).max(1_000_000) }),
        response: { 200: z.object({ version: z.number(), source: z.string() }), ...apiErrors, 410: errorSchema },
      },
    }, async (req) => ({ version: req.params.version, source: await store().version(await workspaceId(req), req.params.id, req.params.version) }));
    fastify.post(`${BASE}/:id/tickets`, {
      preHandler: viewer,
      schema: {
        tags: ['apps'], summary: 'A one-time ticket to open the app in the apps origin\'s iframe: run mode (published version) or edit mode (ws_editor); 503 when apps.origin is empty',
        params: idParams, body: z.object({ mode: z.enum(['run', 'edit']).default('run') }).strict().default({ mode: 'run' }),
        response: {
          201: z.object({
            /** Load this in the iframe; it opens nothing without `secret`. */
            url: z.string(), ticket: z.string(),
            /** Hand this to the iframe by postMessage (never in a URL). */
            secret: z.string(), expires_at: z.string(), version: z.number().nullable(), mode: z.enum(['run', 'edit']),
          }),
          ...apiErrors, 503: errorSchema,
        },
      },
    }, async (req, reply) => {
      const cfg = ctx.services().config.apps;
      if (!cfg.origin) throw new DomainError('unavailable', 'data apps are not served: apps.origin is empty');
      const mode = req.body.mode;
      if (mode === 'edit' && !canEdit(req)) throw forbidden(`requires ws_editor in workspace ${ws(req)}`);
      const wsId = await workspaceId(req);
      const a = await store().get(wsId, req.params.id, mode === 'run');
      const version = mode === 'run' ? a.published_version : null;
      const t = await appTickets(ctx.services()).issue({ userId: requireUser(req).userId, workspaceId: wsId, workspace: ws(req), appId: a.id, version, mode });
      return reply.status(201).send({
        url: `${cfg.origin}/_svc/open?t=${t.ticket}`, ticket: t.ticket, secret: t.secret, expires_at: t.expiresAt.toISOString(), version, mode,
      });
    });
  };
}
