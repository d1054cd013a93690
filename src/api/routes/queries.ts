// The query API (SPEC 8 engine.*, docs/engines.md): SQL run as recorded, bounded, cancellable
// queries of a workspace. Every member may run queries; the role decides which statements run
// (viewers read). History lists your own queries; ws_admin sees everyone's.
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { FastifyRequest } from 'fastify';
import type { AppContext } from '../context.js';
import { guard, requireUser } from '../plugins/auth.js';
import { apiErrors, errorSchema, iso } from '../schemas.js';
import { DomainError, notFound } from '../../errors.js';
import { findWorkspace } from '../../workspaces/workspaces.js';
import { roleOf as actingRole } from '../../access/access.js';
import { TtlCache } from '../../util/ttl-cache.js';
import { queryService } from '../../queries/index.js';
import { ended } from '../../queries/service.js';
import { MAX_PARAMS, MAX_SQL_BYTES } from '../../queries/run.js';
import type { QueryRow } from '../../db/query-types.js';
import type { QueryRole } from '../../queries/types.js';
import type { ResultFormat } from '../../queries/results.js';

const BASE = '/api/workspaces/:ws/queries';
const wsParam = z.object({ ws: z.string().min(1).max(63) });
const idParams = wsParam.extend({ id: z.string().uuid() });
const states = z.enum(['QUEUED', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLED']);
const scalar = z.union([z.string().max(65_536), z.number(), z.boolean(), z.null()]);
const paramName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,62}$/, { message: 'parameter names are letters, digits and _ (at most 63)' });

const submitBody = z.object({
  engine: z.string().min(1).max(63).regex(/^[a-z0-9][a-z0-9-]*$/, { message: 'engine names are lower-case letters, digits and -' }).default('embedded'),
  sql: z.string().min(1).max(MAX_SQL_BYTES).refine((s) => Buffer.byteLength(s) <= MAX_SQL_BYTES, { message: `must be at most ${MAX_SQL_BYTES} bytes` }),
  params: z.union([z.array(scalar).max(MAX_PARAMS), z.record(paramName, scalar).refine((r) => Object.keys(r).length <= MAX_PARAMS, { message: `at most ${MAX_PARAMS} parameters` })]).default([]),
  wait_ms: z.number().int().min(0).max(60_000).default(2_000),
}).strict();

const column = z.object({ name: z.string(), type: z.string() });
const summary = z.object({
  id: z.string(), engine: z.string(), sql: z.string(), state: states, error: z.string().nullable(),
  rows: z.number().nullable(), truncated: z.boolean(), principal: z.string().nullable(),
  created_at: z.string(), started_at: z.string().nullable(), ended_at: z.string().nullable(),
});
const detail = summary.extend({
  params: z.unknown(),
  columns: z.array(column).nullable(),
  /** The first engine.preview_rows rows. */
  preview: z.array(z.array(z.unknown())).nullable(),
  /** Whether GET .../results answers (false before the end, after a failure, and once retention dropped it). */
  result_available: z.boolean(),
  cancel_requested: z.boolean(),
});

const summaryOf = (q: QueryRow) => ({
  id: q.id, engine: q.engine, sql: q.sql, state: q.state, error: q.error, rows: q.rows === null ? null : Number(q.rows),
  truncated: q.truncated, principal: q.principal, created_at: q.created_at.toISOString(), started_at: iso(q.started_at), ended_at: iso(q.ended_at),
});
const detailOf = (q: QueryRow) => ({
  ...summaryOf(q), params: q.params, columns: q.columns, preview: q.preview,
  result_available: q.state === 'SUCCEEDED' && (q.result_key !== null || q.preview !== null), cancel_requested: q.cancel_requested_at !== null,
});

export function queryRoutes(ctx: AppContext): FastifyPluginAsyncZod {
  return async (app) => {
    const viewer = guard(ctx, (req) => ({ workspace: (req.params as { ws: string }).ws, role: 'ws_viewer' }));
    // A workspace's slug never changes and workspaces are never deleted: the slug -> id lookup of
    // every request is kept (at most 10,000 workspaces, ~100 bytes each).
    const ids = new TtlCache<string, string>(10_000, 3_600_000);
    const workspace = async (req: FastifyRequest) => {
      const slug = (req.params as { ws: string }).ws;
      const known = ids.get(slug);
      if (known) return { id: known, slug };
      const ws = await findWorkspace(ctx.services().db, slug);
      if (!ws) throw notFound(`workspace does not exist: ${slug}`);
      ids.set(slug, ws.id);
      return { id: ws.id, slug: ws.slug };
    };
    /** The caller's role in the workspace (a platform administrator acts as ws_admin). */
    const roleOf = (req: FastifyRequest, slug: string): QueryRole => {
      const snap = req.accessSnapshot!;
      return actingRole(snap, slug)!;
    };
    const viewerOf = (req: FastifyRequest, slug: string) => ({ userId: requireUser(req).userId, admin: roleOf(req, slug) === 'ws_admin' });
    const queries = () => queryService(ctx.services());

    app.post(BASE, {
      preHandler: viewer,
      schema: {
        tags: ['queries'], summary: 'Run SQL: answers the ended query (200) when it ends within wait_ms, else the pending one (202)',
        params: wsParam, body: submitBody, response: { 200: detail, 202: detail, ...apiErrors, 503: errorSchema },
      },
    }, async (req, reply) => {
      const ws = await workspace(req);
      const p = requireUser(req);
      const { query, ended: done } = await queries().submit({
        workspace: { id: ws.id, slug: ws.slug }, engine: req.body.engine, sql: req.body.sql, params: req.body.params,
        principal: {
          userId: p.userId, name: req.accessSnapshot?.user?.email ?? p.userId, role: roleOf(req, ws.slug),
          groups: req.accessSnapshot?.groups.map((g) => g.name) ?? [],
        },
        waitMs: req.body.wait_ms,
      });
      return reply.status(done ? 200 : 202).send(detailOf(query));
    });

    app.get(BASE, {
      preHandler: viewer,
      schema: {
        tags: ['queries'], summary: 'Query history, newest first: your own; every member\'s for ws_admin', params: wsParam,
        querystring: z.object({ state: states.optional(), limit: z.coerce.number().int().min(1).max(200).default(50), offset: z.coerce.number().int().min(0).max(100_000).default(0) }),
        response: { 200: z.object({ queries: z.array(summary) }), ...apiErrors },
      },
    }, async (req) => {
      const ws = await workspace(req);
      const rows = await queries().list(ws.id, viewerOf(req, ws.slug), req.query);
      return { queries: rows.map(summaryOf) };
    });

    app.get(`${BASE}/:id`, {
      preHandler: viewer,
      schema: { tags: ['queries'], summary: 'One query: state, columns and the preview rows', params: idParams, response: { 200: detail, ...apiErrors } },
    }, async (req) => {
      const ws = await workspace(req);
      return detailOf(await queries().get(ws.id, req.params.id, viewerOf(req, ws.slug)));
    });

    app.post(`${BASE}/:id/cancel`, {
      preHandler: viewer,
      schema: { tags: ['queries'], summary: 'Cancel a query: a queued one at once, a running one on its engine', params: idParams, response: { 202: detail, ...apiErrors } },
    }, async (req, reply) => {
      const ws = await workspace(req);
      return reply.status(202).send(detailOf(await queries().cancel(ws.id, req.params.id, viewerOf(req, ws.slug))));
    });

    app.get(`${BASE}/:id/results`, {
      preHandler: viewer,
      schema: {
        tags: ['queries'], summary: 'The full result as Parquet (default), CSV or JSON', params: idParams,
        querystring: z.object({ format: z.enum(['parquet', 'csv', 'json']).default('parquet') }),
        response: { 200: z.unknown(), ...apiErrors, 410: errorSchema },
      },
    }, async (req, reply) => {
      const ws = await workspace(req);
      const q = await queries().get(ws.id, req.params.id, viewerOf(req, ws.slug));
      if (q.state !== 'SUCCEEDED') throw new DomainError('conflict', ended(q.state) ? `query has no result: it ended ${q.state}` : `query has no result yet: it is ${q.state}`);
      const format = req.query.format as ResultFormat;
      const source = q.result_key ? { key: q.result_key } : q.preview ? { columns: q.columns ?? [], rows: q.preview } : null;
      const days = ctx.services().config.engine.results_retention_days;
      const gone = () => new DomainError('gone', `the result has expired (engine.results_retention_days = ${days})`);
      if (!source) throw gone();
      const dl = await queries().download(ws.id, source, format);
      if (!dl) throw gone();
      return reply.status(200).header('content-type', dl.contentType).header('content-length', dl.size)
        .header('content-disposition', `attachment; filename="query-${q.id}.${format}"`).send(dl.body);
    });
  };
}
