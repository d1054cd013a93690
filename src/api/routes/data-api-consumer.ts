// The Data API as its consumers see it (SPEC 4.3 `/data-api/*`, docs/data-api.md): GET with the
// parameters in the query string or POST with them in a JSON object, a bearer token of the
// machine identity provider (audience svc-data-api, the endpoint in its scope), one page of rows
// as JSON, CSV or NDJSON with an ETag.
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../context.js';
import { errorSchema } from '../schemas.js';
import { badRequest, DomainError, forbidden, notFound } from '../../errors.js';
import { dataApiAccessLog, dataApiLimits } from '../../data-api/index.js';
import { findWorkspace } from '../../workspaces/workspaces.js';
import { TtlCache } from '../../util/ttl-cache.js';
import { ENDPOINT_NAME_RE, listLatest } from '../../data-api/endpoints.js';
import { dataApiDocument } from '../../data-api/openapi.js';
import { authenticateConsumer, mayCall, UnauthorizedConsumer } from '../../data-api/consumer.js';
import { execute, prepare } from '../../data-api/call.js';
import { CONTENT_TYPES, etagOf, formatOf, notModified, render } from '../../data-api/respond.js';

const params = z.object({ ws: z.string().min(1).max(63), endpoint: z.string().min(1).max(63) });
const errors = { 400: errorSchema, 401: errorSchema, 403: errorSchema, 404: errorSchema, 409: errorSchema, 429: errorSchema, 503: errorSchema };

export function dataApiConsumerRoutes(ctx: AppContext): FastifyPluginAsyncZod {
  return async (app) => {
    // A workspace's slug never changes and workspaces are never deleted (as the query routes).
    // Bounded by count: only slugs that exist are kept (at most 63 characters, ~100 bytes an entry).
    const ids = new TtlCache<string, string>(10_000, 3_600_000);
    const workspaceId = async (slug: string) => {
      const known = ids.get(slug);
      if (known) return known;
      const ws = await findWorkspace(ctx.services().db, slug);
      if (!ws) throw notFound(`workspace does not exist: ${slug}`);
      ids.set(slug, ws.id);
      return ws.id;
    };

    const authenticated = async (req: FastifyRequest, reply: FastifyReply, ws: string) => {
      try {
        return await authenticateConsumer(ctx.services(), req.headers.authorization, ws);
      } catch (err) {
        if (err instanceof UnauthorizedConsumer) reply.header('www-authenticate', err.presented ? 'Bearer realm="data-api", error="invalid_token"' : 'Bearer realm="data-api"');
        throw err;
      }
    };

    // What the access log needs of a call, filled in as the call proceeds; written once it is answered.
    const calls = new WeakMap<FastifyRequest, { wsId: string | null; client: string | null; endpoint: string; version: number | null; rows: number | null; bytes: number | null }>();
    app.addHook('onResponse', async (req, reply) => {
      const c = calls.get(req);
      if (!c) return;
      dataApiAccessLog(ctx.services()).record({
        // A call refused before its workspace was looked up is still the workspace's when this replica knows the slug.
        at: ctx.services().clock.now(), workspace_id: c.wsId ?? ids.get((req.params as { ws: string }).ws) ?? null, client: c.client, method: req.method, path: `/data-api/${(req.params as { ws: string }).ws}/${c.endpoint}`,
        status: reply.statusCode, endpoint: c.endpoint, version: c.version, rows: reply.statusCode === 200 ? c.rows : null,
        bytes: reply.statusCode === 200 ? c.bytes : 0, duration_ms: Math.round(reply.elapsedTime),
      });
    });

    const call = async (req: FastifyRequest, reply: FastifyReply, given: Record<string, unknown>) => {
      const s = ctx.services();
      const { ws, endpoint } = req.params as { ws: string; endpoint: string };
      const logged = { wsId: null as string | null, client: null as string | null, endpoint: endpoint.slice(0, 63), version: null as number | null, rows: null as number | null, bytes: null as number | null };
      calls.set(req, logged);
      if (!ENDPOINT_NAME_RE.test(endpoint)) throw notFound(`endpoint does not exist: ${endpoint}`);
      const consumer = await authenticated(req, reply, ws);
      logged.client = consumer.clientId;
      if (!mayCall(consumer, endpoint)) throw forbidden(`this token may not call endpoint ${endpoint}`);
      const wsId = await workspaceId(ws);
      logged.wsId = wsId;
      const limits = dataApiLimits(s);
      if (limits.limited) {
        const take = await limits.take(`${wsId}:${consumer.clientId}:${endpoint}`);
        const { burst, windowSecs } = limits.policy;
        reply.header('ratelimit-policy', `"endpoint";q=${burst};w=${windowSecs}`).header('ratelimit', `"endpoint";r=${take.remaining};t=${take.resetSecs}`);
        if (!take.ok) {
          throw new DomainError('too_many_requests', `rate limit of endpoint ${endpoint} reached for this client (${s.config.data_api.rate_limit_per_minute} calls a minute, ${burst} at once): retry in ${take.resetSecs} s`, take.resetSecs);
        }
      }
      const format = formatOf(given.format, req.headers.accept);
      if (!format) throw badRequest('invalid parameter format: must be json, csv or ndjson');
      const prepared = await prepare(s, { workspaceId: wsId, endpoint, consumer, given });
      // The caller's grant is part of the key: a changed grant never meets an answer cached for another.
      const key = `${prepared.key}:${format}:${consumer.access}`;
      let answer = await limits.get(key);
      reply.header('x-data-api-cache', answer ? 'hit' : 'miss');
      if (!answer) {
        const page = await execute(s, prepared, consumer);
        const body = render(page, format);
        let link: string | null = null;
        if (page.more && req.method === 'GET') {
          const next = new URLSearchParams();
          for (const [k, v] of Object.entries({ ...given, offset: prepared.offset + prepared.limit, limit: prepared.limit })) if (typeof v !== 'object') next.set(k, String(v));
          link = `</data-api/${ws}/${endpoint}?${next.toString()}>; rel="next"`;
        }
        answer = { body, etag: etagOf(body), contentType: CONTENT_TYPES[format], version: prepared.ep.version, link, rows: page.rows.length, storedAt: s.clock.now().getTime() };
        await limits.set(key, answer);
      }
      reply.header('etag', answer.etag).header('cache-control', `private, max-age=${limits.maxAge(answer.storedAt)}`).header('vary', 'Authorization, Accept')
        .header('x-data-api-version', String(answer.version));
      if (answer.link) reply.header('link', answer.link);
      Object.assign(logged, { version: answer.version, rows: answer.rows, bytes: Buffer.byteLength(answer.body) });
      if (notModified(req.headers['if-none-match'], answer.etag)) return reply.status(304).send();
      return reply.status(200).header('content-type', answer.contentType).send(answer.body);
    };

    app.get('/data-api/:ws/openapi.json', {
      schema: {
        tags: ['data api'], summary: 'The OpenAPI 3.1 document of the workspace\'s Data API: the endpoints the presented token may call',
        params: z.object({ ws: z.string().min(1).max(63) }), response: { 200: z.unknown(), 401: errorSchema, 403: errorSchema, 404: errorSchema },
      },
    }, async (req, reply) => {
      const s = ctx.services();
      const { ws } = req.params as { ws: string };
      const consumer = await authenticated(req, reply, ws);
      const all = await listLatest(s.db, await workspaceId(ws));
      const doc = dataApiDocument(s.config, ws, all.filter((e) => mayCall(consumer, e.name)));
      return reply.status(200).header('content-type', 'application/json; charset=utf-8').header('cache-control', 'private, no-cache').send(JSON.stringify(doc));
    });

    app.get('/data-api/:ws/:endpoint', {
      schema: {
        tags: ['data api'], summary: 'Call a Data API endpoint: parameters in the query string, plus limit, offset, version (pin) and format (json, csv, ndjson)',
        params, response: { 200: z.unknown(), 304: z.null(), ...errors },
      },
    }, async (req, reply) => call(req, reply, req.query as Record<string, unknown>));

    app.post('/data-api/:ws/:endpoint', {
      config: { csrf: false },
      schema: {
        tags: ['data api'], summary: 'Call a Data API endpoint: parameters in a JSON object, plus limit, offset, version (pin) and format',
        params, body: z.record(z.string().max(63), z.union([z.string().max(65_536), z.number(), z.boolean(), z.null()])).refine((r) => Object.keys(r).length <= 60, { message: 'at most 60 parameters' }).optional(),
        response: { 200: z.unknown(), 304: z.null(), ...errors },
      },
    }, async (req, reply) => call(req, reply, (req.body ?? {}) as Record<string, unknown>));
  };
}
