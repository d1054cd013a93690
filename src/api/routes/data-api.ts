// Managing a workspace's Data API (docs/data-api.md): endpoints are published by ws_editor and
// above (every member may read them); clients that call them are made by ws_admin, who also
// reads the access log.
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { FastifyRequest } from 'fastify';
import type { AppContext } from '../context.js';
import { guard, requireUser } from '../plugins/auth.js';
import { actorOf } from './admin.js';
import { apiErrors, bigintCursor, errorSchema } from '../schemas.js';
import { listAccessLog } from '../../data-api/access-log.js';
import { DomainError, notFound } from '../../errors.js';
import { findWorkspace } from '../../workspaces/workspaces.js';
import { QueryFailure } from '../../queries/types.js';
import { MAX_SQL_BYTES } from '../../queries/run.js';
import { probeColumns } from '../../data-api/probe.js';
import { checkName, deleteEndpoint, ENDPOINT_NAME_RE, findVersion, listLatest, listVersions, publish, type EndpointVersion } from '../../data-api/endpoints.js';
import { MAX_PARAMS_PER_ENDPOINT, MAX_STRING, PARAM_TYPES } from '../../data-api/params.js';
import { createClient } from '../../idp/clients.js';
import { ALL_ENDPOINTS, DATA_API_AUDIENCE, SCOPE_PREFIX, dataApiPublicUrl, tokenEndpoint } from '../../data-api/consumer.js';
import type { Services } from '../../services.js';

const BASE = '/api/workspaces/:ws/data-api';
const wsParam = z.object({ ws: z.string().min(1).max(63) });
const endpointName = z.string().min(1).max(63).regex(ENDPOINT_NAME_RE, { message: 'endpoint names are lower-case letters, digits, - and _, starting with a letter or digit' });
const nameParams = wsParam.extend({ name: endpointName });
const value = z.union([z.string().max(MAX_STRING), z.number(), z.boolean()]);

const paramSpec = z.object({
  name: z.string().min(1).max(63),
  type: z.enum(PARAM_TYPES),
  description: z.string().max(1000).optional(),
  default: value.optional(),
  minimum: z.number().optional(),
  maximum: z.number().optional(),
  max_length: z.number().int().min(1).max(MAX_STRING).optional(),
  enum: z.array(z.string().max(MAX_STRING)).min(1).max(100).optional(),
}).strict();

const publishBody = z.object({
  engine: z.string().min(1).max(63).regex(/^[a-z0-9][a-z0-9-]*$/, { message: 'engine names are lower-case letters, digits and -' }).default('embedded'),
  sql: z.string().min(1).max(MAX_SQL_BYTES),
  params: z.array(paramSpec).max(MAX_PARAMS_PER_ENDPOINT).default([]),
  description: z.string().max(4000).default(''),
}).strict();

const endpointSchema = z.object({
  name: z.string(), version: z.number(), latest_version: z.number(), engine: z.string(), sql: z.string(),
  params: z.array(paramSpec), description: z.string(), created_at: z.string(),
  columns: z.array(z.object({ name: z.string(), type: z.string() })).nullable().meta({ description: 'result columns read at publication; null when the engine could not be asked' }),
  /** Where consumers call it. */
  url: z.string(),
});

const clientBody = z.object({
  name: z.string().min(1).max(255),
  endpoints: z.array(z.union([endpointName, z.literal('*')])).min(1).max(50).meta({ description: 'endpoint names the client may call; ["*"] for all of the workspace\'s' }),
}).strict();

const accessEntry = z.object({
  id: z.string(), at: z.string(), client: z.string().nullable(), client_name: z.string().nullable(), method: z.string(), path: z.string(), status: z.number(),
  endpoint: z.string().nullable(), version: z.number().nullable(), rows: z.number().nullable(), bytes: z.number().nullable(), duration_ms: z.number().nullable(),
});

const clientAnswer = z.object({
  client_id: z.string(), client_secret: z.string().meta({ description: 'shown this once; only a hash is stored' }),
  name: z.string(), workspace: z.string(), audience: z.string(), scopes: z.array(z.string()), token_endpoint: z.string(),
});

export function endpointView(cfg: Services['config'], ws: string, e: EndpointVersion) {
  return {
    name: e.name, version: e.version, latest_version: e.latest_version, engine: e.engine, sql: e.sql, params: e.params, description: e.description,
    created_at: e.created_at.toISOString(), columns: e.columns, url: `${dataApiPublicUrl(cfg)}/data-api/${ws}/${e.name}`,
  };
}

export function dataApiRoutes(ctx: AppContext): FastifyPluginAsyncZod {
  return async (app) => {
    const need = (role: 'ws_viewer' | 'ws_editor' | 'ws_admin') => guard(ctx, (req) => ({ workspace: (req.params as { ws: string }).ws, role }));
    const workspace = async (req: FastifyRequest) => {
      const slug = (req.params as { ws: string }).ws;
      const ws = await findWorkspace(ctx.services().db, slug);
      if (!ws) throw notFound(`workspace does not exist: ${slug}`);
      return ws;
    };

    app.get(`${BASE}/endpoints`, {
      preHandler: need('ws_viewer'),
      schema: { tags: ['data api'], summary: 'The workspace\'s Data API endpoints (latest versions)', params: wsParam, response: { 200: z.object({ endpoints: z.array(endpointSchema) }), ...apiErrors } },
    }, async (req) => {
      const ws = await workspace(req);
      return { endpoints: (await listLatest(ctx.services().db, ws.id)).map((e) => endpointView(ctx.services().config, ws.slug, e)) };
    });

    app.put(`${BASE}/endpoints/:name`, {
      preHandler: need('ws_editor'),
      schema: {
        tags: ['data api'], summary: 'Publish an endpoint: a changed definition becomes a new version (201); the same one changes nothing (200)',
        params: nameParams, body: publishBody, response: { 200: endpointSchema, 201: endpointSchema, ...apiErrors },
      },
    }, async (req, reply) => {
      const s = ctx.services();
      const ws = await workspace(req);
      try {
        await s.queryEngines.driver(ws.id, req.body.engine);
      } catch (err) {
        if (err instanceof QueryFailure && err.kind === 'disabled') throw new DomainError('disabled', err.message);
        if (err instanceof QueryFailure && err.kind === 'not_found') throw new DomainError('bad_request', err.message);
        throw err;
      }
      checkName(req.params.name);
      const columns = await probeColumns(s, ws.id, req.body);
      const { endpoint, created } = await publish(s.db, s.clock, ws.id, req.params.name, req.body, requireUser(req).userId, columns, { actor: actorOf(req), workspace: ws.slug });
      return reply.status(created ? 201 : 200).send(endpointView(s.config, ws.slug, endpoint));
    });

    app.get(`${BASE}/endpoints/:name`, {
      preHandler: need('ws_viewer'),
      schema: {
        tags: ['data api'], summary: 'An endpoint\'s latest version and the list of its versions', params: nameParams,
        response: { 200: endpointSchema.extend({ versions: z.array(z.object({ version: z.number(), created_at: z.string() })) }), ...apiErrors },
      },
    }, async (req) => {
      const ws = await workspace(req);
      const all = await listVersions(ctx.services().db, ws.id, req.params.name);
      return { ...endpointView(ctx.services().config, ws.slug, all[0]), versions: all.map((v) => ({ version: v.version, created_at: v.created_at.toISOString() })) };
    });

    app.get(`${BASE}/endpoints/:name/versions/:version`, {
      preHandler: need('ws_viewer'),
      schema: { tags: ['data api'], summary: 'One version of an endpoint', params: nameParams.extend({ version: z.coerce.number().int().min(1).max(2_147_483_647) }), response: { 200: endpointSchema, ...apiErrors } },
    }, async (req) => {
      const ws = await workspace(req);
      return endpointView(ctx.services().config, ws.slug, await findVersion(ctx.services().db, ws.id, req.params.name, req.params.version));
    });

    app.delete(`${BASE}/endpoints/:name`, {
      preHandler: need('ws_editor'),
      schema: { tags: ['data api'], summary: 'Delete an endpoint and every version of it', params: nameParams, response: { 204: z.null(), ...apiErrors } },
    }, async (req, reply) => {
      const ws = await workspace(req);
      await deleteEndpoint(ctx.services().db, ws.id, req.params.name, { actor: actorOf(req), workspace: ws.slug });
      return reply.status(204).send(null);
    });

    app.get(`${BASE}/access-log`, {
      preHandler: need('ws_admin'),
      schema: {
        tags: ['data api'], summary: 'The workspace\'s Data API calls, newest first (kept data_api.access_log_retention_days)', params: wsParam,
        querystring: z.object({
          limit: z.coerce.number().int().min(1).max(500).default(100), before: bigintCursor.optional(),
          endpoint: z.string().min(1).max(63).optional(), client: z.string().min(1).max(128).optional(),
        }),
        response: { 200: z.object({ entries: z.array(accessEntry), next_before: z.string().nullable() }), ...apiErrors },
      },
    }, async (req) => {
      const ws = await workspace(req);
      const rows = await listAccessLog(ctx.services().db, ws.id, req.query);
      return {
        entries: rows.map((r) => ({ ...r, id: String(r.id), at: r.at.toISOString(), bytes: r.bytes === null ? null : Number(r.bytes) })),
        next_before: rows.length === req.query.limit ? String(rows[rows.length - 1].id) : null,
      };
    });

    app.post(`${BASE}/clients`, {
      preHandler: need('ws_admin'),
      schema: {
        tags: ['data api'], summary: 'Make a client of the machine identity provider that may call the named endpoints; the answer holds its secret, shown this once, and the token endpoint',
        params: wsParam, body: clientBody, response: { 201: clientAnswer, ...apiErrors, 503: errorSchema },
      },
    }, async (req, reply) => {
      const s = ctx.services();
      const ws = await workspace(req);
      const scopes = req.body.endpoints.includes('*') ? [ALL_ENDPOINTS] : [...new Set(req.body.endpoints)].map((e) => SCOPE_PREFIX + e);
      const c = await createClient(s.db, actorOf(req), { name: req.body.name, audiences: [DATA_API_AUDIENCE], scopes, workspace: ws.slug });
      return reply.status(201).send({
        client_id: c.client_id, client_secret: c.client_secret, name: c.name, workspace: ws.slug, audience: DATA_API_AUDIENCE, scopes, token_endpoint: tokenEndpoint(s.config),
      });
    });
  };
}
