// Anonymous webhook triggers: POST /workflows/v1/{ws}/executions/webhook/{namespace}/{flowId}/{key}
// starts an execution of the flow when {key} equals the key of one of its enabled `webhook`
// triggers. The key in the URL is the only credential (SPEC 4.3, 5.2.5).
// - Mounted only when workflow.webhooks_enabled is true; otherwise the path is not routed at all
//   and answers like any unknown route. `svc openapi` (no services) documents it.
// - The key is compared in constant time (SHA-256 of both sides, then timingSafeEqual, against
//   every webhook trigger of the flow). A wrong key, a disabled trigger, a missing flow and a
//   missing workspace all answer the same 404 after the same single lookup.
// - The request body (JSON, text or form; at most 1 MiB; may be empty) becomes `trigger.body` of
//   the execution, which every viewer of the workspace can read. Inputs take their defaults.
// - No session: the CSRF check does not apply (config csrf: false), and a cookie sent along is
//   ignored for authorization.
import { createHash, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppContext } from '../context.js';
import type { Services } from '../../services.js';
import { errorSchema } from '../schemas.js';
import { DomainError } from '../../errors.js';
import { createExecution } from '../../workflows/executions.js';
import { idempotencyKeyOf } from '../idempotency.js';
import type { FlowDef } from '../../workflows/flow.js';

export const WEBHOOK_BODY_LIMIT = 1024 * 1024;
const NO_SUCH_WEBHOOK = 'no such webhook';

const params = z.object({
  ws: z.string().min(1).max(63),
  namespace: z.string().min(1).max(200),
  flowId: z.string().min(1).max(100),
  key: z.string().min(1).max(256),
});

const sha256 = (s: string) => createHash('sha256').update(s, 'utf8').digest();

/**
 * The id of the trigger whose key equals `given`, or undefined. Compares against every key, each
 * in constant time (both sides hashed first, so lengths do not matter), and at least once.
 */
export function matchWebhookKey(given: string, triggers: Array<{ id: string; key: string }>): string | undefined {
  const g = sha256(given);
  let matched: string | undefined;
  for (const t of triggers.length ? triggers : [{ id: '', key: '\u0000no-webhook\u0000' }]) {
    if (timingSafeEqual(g, sha256(t.key)) && triggers.length && matched === undefined) matched = t.id;
  }
  return matched;
}

function servicesOrNull(ctx: AppContext): Services | null {
  try { return ctx.services(); } catch { return null; }
}

export function webhooksRoutes(ctx: AppContext): FastifyPluginAsyncZod {
  return async (app) => {
    const services = servicesOrNull(ctx);
    // Not mounted at all when off; without services (`svc openapi`) the route is documented.
    if (services && !services.config.workflow.webhooks_enabled) return;

    // Any body: JSON (any value), text, or form fields (form parsing is registered app-wide).
    app.addContentTypeParser('text/plain', { parseAs: 'string', bodyLimit: WEBHOOK_BODY_LIMIT }, (_req, body, done) => done(null, body));

    app.post('/workflows/v1/:ws/executions/webhook/:namespace/:flowId/:key', {
      bodyLimit: WEBHOOK_BODY_LIMIT,
      config: { csrf: false },
      schema: {
        tags: ['workflows'],
        summary: 'Start an execution through a webhook trigger (anonymous; the key is the credential; mounted only when workflow.webhooks_enabled); an Idempotency-Key header answers the execution the same key started in the last 24 h',
        params,
        body: z.unknown(),
        response: { 201: z.object({ id: z.string(), state: z.string() }), 400: errorSchema, 404: errorSchema, 413: errorSchema, 415: errorSchema },
      },
    }, async (req, reply) => {
      const s = ctx.services();
      const { ws, namespace, flowId, key } = req.params;
      const row = await s.db.selectFrom('flows').innerJoin('workspaces', 'workspaces.id', 'flows.workspace_id')
        .select(['flows.workspace_id', 'flows.definition'])
        .where('workspaces.slug', '=', ws).where('flows.namespace', '=', namespace).where('flows.flow_id', '=', flowId).where('flows.deleted', '=', false)
        .executeTakeFirst();
      const triggers = ((row?.definition as FlowDef | undefined)?.triggers ?? [])
        .flatMap((t) => (t.type === 'webhook' && !t.disabled ? [{ id: t.id, key: t.key }] : []));
      const matched = matchWebhookKey(key, triggers);
      if (!row || matched === undefined) throw new DomainError('not_found', NO_SUCH_WEBHOOK);
      const body = req.body === undefined ? null : req.body;
      let exec;
      try {
        exec = await createExecution(s, {
          workspaceId: row.workspace_id, namespace, flowId, inputs: {},
          trigger: { type: 'webhook', id: matched, body },
          request: true, idempotencyKey: idempotencyKeyOf(req.headers),
        });
      } catch (err) {
        // deleted between the lookup and here: the same answer as any missing webhook
        if (err instanceof DomainError && err.code === 'not_found') throw new DomainError('not_found', NO_SUCH_WEBHOOK);
        throw err;
      }
      req.log.info({ namespace, flow: flowId, trigger: matched, execution: exec.id }, 'webhook trigger fired');
      return reply.status(201).send({ id: exec.id, state: exec.state });
    });
  };
}
