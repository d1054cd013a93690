// Alerts and reports under /api/workspaces/{ws}/alerts and /api/workspaces/{ws}/reports
// (docs/alerts.md). ws_viewer reads; ws_editor creates, changes, deletes, runs, test-sends and
// rotates the signing secret. Thin: the rules live in src/automation.
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { FastifyRequest } from 'fastify';
import type { AppContext } from '../context.js';
import { guard } from '../plugins/auth.js';
import { actorOf } from './admin.js';
import { apiErrors, iso } from '../schemas.js';
import { DependencyUnavailable, notFound } from '../../errors.js';
import { failEvaluation, recordManualRun } from '../../automation/evaluate.js';
import { findWorkspace } from '../../workspaces/workspaces.js';
import type { AutomationKind } from '../../db/automation-types.js';
import { QUEUES, jobOptions } from '../../queue/queues.js';
import {
  alertInput, reportInput, automationView, createAutomation, deleteAutomation, getAutomation, listAutomations,
  rotateSigningSecret, updateAutomation, gateOf, unsealRecipientUrl, linkOf, type StoredRecipient,
} from '../../automation/automations.js';
import { attemptDelivery, recordDeliveries } from '../../automation/delivery.js';
import { checkTarget } from '../../automation/outbound.js';

const wsParam = z.object({ ws: z.string().min(1).max(63) });
const idParams = wsParam.extend({ id: z.string().min(1).max(64) });
const view = z.object({
  id: z.string(), kind: z.enum(['alert', 'report']), name: z.string(), description: z.string(), engine: z.string(), sql: z.string(),
  condition: z.unknown().optional(), content: z.unknown().optional(), cron: z.string(), timezone: z.string(), grace_secs: z.number(),
  enabled: z.boolean(), recipients: z.array(z.object({ type: z.string(), target: z.string() })),
  state: z.enum(['ok', 'triggered', 'error']), state_since: z.string(), last_notified_at: z.string().nullable(),
  last_evaluated_at: z.string().nullable(), next_fire_at: z.string().nullable(), link: z.string(), created_at: z.string(), updated_at: z.string(),
});
const withSecret = view.extend({ signing_secret: z.string() });
const evaluationView = z.object({
  id: z.string(), scheduled_for: z.string(), manual: z.boolean(), started_at: z.string(), ended_at: z.string().nullable(),
  outcome: z.string().nullable(), value: z.unknown(), error: z.string().nullable(), notification: z.string().nullable(),
});
const deliveryView = z.object({
  id: z.string(), evaluation_id: z.string().nullable(), channel: z.string(), target: z.string(), event: z.string(), status: z.string(),
  attempts: z.number(), http_status: z.number().nullable(), error: z.string().nullable(), created_at: z.string(), updated_at: z.string(),
});
const limitQuery = z.object({ limit: z.coerce.number().int().min(1).max(500).optional() });

export function automationRoutes(ctx: AppContext): FastifyPluginAsyncZod {
  return async (app) => {
    const viewer = guard(ctx, (req) => ({ workspace: (req.params as { ws: string }).ws, role: 'ws_viewer' }));
    const editor = guard(ctx, (req) => ({ workspace: (req.params as { ws: string }).ws, role: 'ws_editor' }));
    const errors = apiErrors;
    const workspace = async (req: FastifyRequest) => {
      const slug = (req.params as { ws: string }).ws;
      const ws = await findWorkspace(ctx.services().db, slug);
      if (!ws) throw notFound(`workspace does not exist: ${slug}`);
      return ws;
    };

    for (const kind of ['alert', 'report'] as const satisfies readonly AutomationKind[]) {
      const base = `/api/workspaces/:ws/${kind}s`;
      const tags = [`${kind}s`];
      const body = kind === 'alert' ? alertInput : reportInput;
      const updateBody = body.extend({ recipients: body.shape.recipients.optional() });
      const load = async (req: FastifyRequest) => {
        const ws = await workspace(req);
        return { ws, row: await getAutomation(ctx.services(), ws.id, kind, (req.params as { id: string }).id) };
      };
      const out = (row: Parameters<typeof automationView>[0], slug: string) => automationView(row, slug, ctx.services().config);

      app.get(base, {
        preHandler: viewer,
        schema: { tags, summary: `The workspace's ${kind}s`, params: wsParam, response: { 200: z.object({ [`${kind}s`]: z.array(view) }), ...errors } },
      }, async (req) => {
        const ws = await workspace(req);
        return { [`${kind}s`]: (await listAutomations(ctx.services(), ws.id, kind)).map((r) => out(r, ws.slug)) };
      });

      app.post(base, {
        preHandler: editor,
        schema: { tags, summary: `Create a ${kind}; the answer carries its webhook signing secret, once`, params: wsParam, body, response: { 201: withSecret, ...errors } },
      }, async (req, reply) => {
        const ws = await workspace(req);
        const { row, signingSecret } = await createAutomation(ctx.services(), actorOf(req), ws.id, { ...(req.body as z.infer<typeof alertInput>), kind } as never, ws.slug);
        return reply.status(201).send({ ...out(row, ws.slug), signing_secret: signingSecret });
      });

      app.get(`${base}/:id`, {
        preHandler: viewer,
        schema: { tags, summary: `One ${kind}`, params: idParams, response: { 200: view, ...errors } },
      }, async (req) => {
        const { ws, row } = await load(req);
        return out(row, ws.slug);
      });

      app.put(`${base}/:id`, {
        preHandler: editor,
        schema: { tags, summary: `Replace a ${kind} (recipients left out are kept)`, params: idParams, body: updateBody, response: { 200: view, ...errors } },
      }, async (req) => {
        const { ws, row } = await load(req);
        return out(await updateAutomation(ctx.services(), actorOf(req), row, { ...(req.body as object), kind } as never, ws.slug), ws.slug);
      });

      app.delete(`${base}/:id`, {
        preHandler: editor,
        schema: { tags, summary: `Delete a ${kind}, its evaluations and deliveries`, params: idParams, response: { 204: z.null(), ...errors } },
      }, async (req, reply) => {
        const { ws, row } = await load(req);
        await deleteAutomation(ctx.services(), row, { actor: actorOf(req), workspace: ws.slug });
        return reply.status(204).send(null);
      });

      app.post(`${base}/:id/run`, {
        preHandler: editor,
        schema: { tags, summary: `Evaluate a ${kind} now (notifies as a scheduled run would)`, params: idParams, response: { 202: z.object({ queued: z.boolean(), scheduled_for: z.string() }), ...errors } },
      }, async (req, reply) => {
        const { row } = await load(req);
        const s = ctx.services();
        const at = s.clock.now();
        if (!s.queues.available()) throw new DependencyUnavailable('Redis', 'the job queue is not connected: a manual run cannot be queued');
        // The run is recorded first (the page shows it running); one that cannot be queued ends as an error there.
        const evaluationId = await recordManualRun(s, row.id, at);
        try {
          await s.queues.forRequest(() => s.queues.get(QUEUES.automation).add('evaluate', { automationId: row.id, slot: at.toISOString(), manual: true, evaluationId },
            jobOptions(QUEUES.automation, { jobId: `evaluate-${row.id}-manual-${at.getTime()}` })), 'the manual run');
        } catch (err) {
          await failEvaluation(s, evaluationId, 'the run could not be queued (a service it needs is unavailable); run it again');
          throw err;
        }
        return reply.status(202).send({ queued: true, scheduled_for: at.toISOString() });
      });

      app.post(`${base}/:id/test`, {
        preHandler: editor,
        schema: {
          tags, summary: `Send a test notification to every recipient of a ${kind} now; 400 when the SSRF gate refuses one`, params: idParams,
          response: { 200: z.object({ deliveries: z.array(deliveryView) }), ...errors },
        },
      }, async (req) => {
        const { ws, row } = await load(req);
        const s = ctx.services();
        // The gate first, on every recipient, so a refusal is a 400 before anything is sent.
        for (let i = 0; i < (row.recipients as StoredRecipient[]).length; i++) await checkTarget(gateOf(s), unsealRecipientUrl(s, row, i));
        const link = linkOf(s.config, ws.slug, row);
        const ids = await recordDeliveries(s, row, null, {
          event: 'test', text: `Test notification of ${kind} "${row.name}". ${link}`,
          body: { event: 'test', workspace: ws.slug, [kind]: { id: row.id, name: row.name, url: link }, sent_at: s.clock.now().toISOString() },
        });
        await Promise.all(ids.map((id) => attemptDelivery(s, id, true)));
        const rows = await s.db.selectFrom('automation_deliveries').selectAll().where('id', 'in', ids).orderBy('recipient').execute();
        return { deliveries: rows.map(deliveryOut) };
      });

      app.post(`${base}/:id/rotate-secret`, {
        preHandler: editor,
        schema: { tags, summary: `A new webhook signing secret for a ${kind}, answered once`, params: idParams, response: { 200: z.object({ signing_secret: z.string() }), ...errors } },
      }, async (req) => {
        const { row } = await load(req);
        return { signing_secret: await rotateSigningSecret(ctx.services(), row) };
      });

      app.get(`${base}/:id/evaluations`, {
        preHandler: viewer,
        schema: { tags, summary: `Evaluations of a ${kind}, newest first`, params: idParams, querystring: limitQuery, response: { 200: z.object({ evaluations: z.array(evaluationView) }), ...errors } },
      }, async (req) => {
        const { row } = await load(req);
        const rows = await ctx.services().db.selectFrom('automation_evaluations').selectAll().where('automation_id', '=', row.id)
          .orderBy('started_at', 'desc').limit(req.query.limit ?? 100).execute();
        return {
          evaluations: rows.map((e) => ({
            id: e.id, scheduled_for: new Date(e.scheduled_for).toISOString(), manual: e.manual, started_at: e.started_at.toISOString(), ended_at: iso(e.ended_at),
            outcome: e.outcome, value: e.value, error: e.error, notification: e.notification,
          })),
        };
      });

      app.get(`${base}/:id/deliveries`, {
        preHandler: viewer,
        schema: { tags, summary: `Deliveries of a ${kind} and their outcomes, newest first`, params: idParams, querystring: limitQuery, response: { 200: z.object({ deliveries: z.array(deliveryView) }), ...errors } },
      }, async (req) => {
        const { row } = await load(req);
        const rows = await ctx.services().db.selectFrom('automation_deliveries').selectAll().where('automation_id', '=', row.id)
          .orderBy('created_at', 'desc').orderBy('recipient').limit(req.query.limit ?? 100).execute();
        return { deliveries: rows.map(deliveryOut) };
      });
    }
  };
}

function deliveryOut(d: { id: string; evaluation_id: string | null; channel: string; target: string; event: string; status: string; attempts: number; http_status: number | null; error: string | null; created_at: Date; updated_at: Date }) {
  return {
    id: d.id, evaluation_id: d.evaluation_id, channel: d.channel, target: d.target, event: d.event, status: d.status, attempts: d.attempts,
    http_status: d.http_status, error: d.error, created_at: d.created_at.toISOString(), updated_at: d.updated_at.toISOString(),
  };
}
