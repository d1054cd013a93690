// The workflow API under /workflows/v1/{ws}: flows (YAML), executions, logs, files, namespace files
// and secrets. Thin: it validates, records and enqueues; workers do the rest.
//   ws_viewer: read     ws_editor: save flows, run and kill, write namespace files
//   ws_admin: secrets   workflow:use_secrets: save a flow whose templates call secret()
import { Readable } from 'node:stream';
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { FastifyRequest } from 'fastify';
import type { AppContext } from '../context.js';
import { guard } from '../plugins/auth.js';
import { actorOf } from './admin.js';
import { errorSchema, iso, apiErrors, bigintCursor } from '../schemas.js';
import { allows } from '../../access/access.js';
import { forbidden, notFound, badRequest, DomainError } from '../../errors.js';
import { findWorkspace } from '../../workspaces/workspaces.js';
import { deleteFlow, getFlow, getRevision, listFlows, listRevisions, saveFlow, validateSource } from '../../workflows/flows.js';
import { idempotencyKeyOf } from '../idempotency.js';
import { createExecution, EXEC_CURSOR_RE, execCursor, executionStats, getExecution, listAttempts, listExecutions, requestKill } from '../../workflows/executions.js';
import { deleteNamespaceFile, getExecutionFile, getNamespaceFile, listExecutionFiles, listNamespaceFiles, putNamespaceFile } from '../../workflows/files.js';
import { deleteWorkflowSecret, listWorkflowSecrets, putWorkflowSecret } from '../../workflows/secrets.js';
import { NAMESPACE_RE, ID_RE } from '../../workflows/flow.js';
import { listTriggers } from '../../workflows/trigger-list.js';
import { flowJsonSchema } from '../../workflows/flow-schema.js';

const BASE = '/workflows/v1/:ws';
const errors = apiErrors;
const wsParam = z.object({ ws: z.string().min(1).max(63) });
const flowParams = wsParam.extend({ namespace: z.string().regex(NAMESPACE_RE), id: z.string().regex(ID_RE) });
const execParams = wsParam.extend({ id: z.string().uuid() });
const nsParams = wsParam.extend({ namespace: z.string().regex(NAMESPACE_RE) });
const states = z.enum(['CREATED', 'RUNNING', 'SUCCESS', 'FAILED', 'KILLING', 'KILLED']);

const flowView = z.object({ namespace: z.string(), id: z.string(), revision: z.number(), source: z.string(), uses_secrets: z.boolean(), updated_at: z.string() });
const taskRunView = z.object({
  id: z.string(), task_id: z.string(), path: z.string(), parent_id: z.string().nullable(), state: z.string(), attempt: z.number(),
  iteration: z.unknown(), outputs: z.record(z.string(), z.unknown()), error: z.string().nullable(),
  started_at: z.string().nullable(), ended_at: z.string().nullable(),
});
const attemptView = z.object({
  task_run_id: z.string(), attempt: z.number(), state: z.string(), reason: z.string().nullable(), log_lines: z.number(),
  started_at: z.string(), ended_at: z.string().nullable(),
});
const executionView = z.object({
  id: z.string(), namespace: z.string(), flow_id: z.string(), flow_revision: z.number(), state: states,
  inputs: z.record(z.string(), z.unknown()), outputs: z.record(z.string(), z.unknown()), trigger: z.unknown(), error: z.string().nullable(),
  created_at: z.string(), started_at: z.string().nullable(), ended_at: z.string().nullable(), kill_requested_at: z.string().nullable(),
});

type ExecRow = Awaited<ReturnType<typeof getExecution>>['exec'];
const execOut = (e: ExecRow) => ({
  id: e.id, namespace: e.namespace, flow_id: e.flow_id, flow_revision: e.flow_revision, state: e.state, inputs: e.inputs, outputs: e.outputs,
  trigger: e.trigger, error: e.error, created_at: e.created_at.toISOString(), started_at: iso(e.started_at), ended_at: iso(e.ended_at), kill_requested_at: iso(e.kill_requested_at),
});

export function workflowRoutes(ctx: AppContext): FastifyPluginAsyncZod {
  return async (app) => {
    // Flow sources are YAML; namespace files are raw bytes streamed to the object store.
    app.addContentTypeParser(['application/x-yaml', 'application/yaml', 'text/yaml', 'text/plain'], { parseAs: 'string', bodyLimit: 1024 * 1024 }, (_req, body, done) => done(null, body));
    app.addContentTypeParser('application/octet-stream', (_req, payload, done) => done(null, payload));

    const need = (role: 'ws_viewer' | 'ws_editor' | 'ws_admin') => guard(ctx, (req) => ({ workspace: (req.params as { ws: string }).ws, role }));
    const viewer = need('ws_viewer'); const editor = need('ws_editor'); const admin = need('ws_admin');
    const workspace = async (req: FastifyRequest) => {
      const slug = (req.params as { ws: string }).ws;
      const ws = await findWorkspace(ctx.services().db, slug);
      if (!ws) throw notFound(`workspace does not exist: ${slug}`);
      return ws;
    };
    const sourceOf = (body: unknown): string => {
      if (typeof body === 'string') return body;
      if (body && typeof body === 'object' && typeof (body as { source?: unknown }).source === 'string') return (body as { source: string }).source;
      throw badRequest('send the flow as YAML (Content-Type: application/x-yaml) or JSON {"source": "<yaml>"}');
    };
    const canUseSecrets = (req: FastifyRequest, slug: string) => req.accessSnapshot !== undefined && allows(req.accessSnapshot, { workspace: slug, permission: 'workflow:use_secrets' });
    const flowOut = (f: Awaited<ReturnType<typeof getFlow>>) => ({ namespace: f.namespace, id: f.flow_id, revision: f.revision, source: f.source, uses_secrets: f.uses_secrets, updated_at: f.updated_at.toISOString() });

    const save = async (req: FastifyRequest, expect?: { namespace: string; flowId: string }) => {
      const ws = await workspace(req);
      const source = sourceOf(req.body);
      const parsed = validateSource(source);
      if (parsed.usesSecrets && !canUseSecrets(req, ws.slug)) {
        throw forbidden('this flow reads workspace secrets: saving it requires workflow:use_secrets (ws_admin)');
      }
      return saveFlow(ctx.services(), actorOf(req), ws.id, ws.slug, source, expect);
    };

    app.post(`${BASE}/flows`, {
      preHandler: editor,
      schema: { tags: ['workflows'], summary: 'Create (or update) a flow from its YAML source', params: wsParam, body: z.unknown(), response: { 200: flowView, 201: flowView, ...errors } },
    }, async (req, reply) => {
      const { flow, created } = await save(req);
      return reply.status(created ? 201 : 200).send(flowOut(flow));
    });

    app.post(`${BASE}/flows/validate`, {
      preHandler: viewer,
      schema: { tags: ['workflows'], summary: 'Validate a flow source without saving it', params: wsParam, body: z.unknown(), response: { 200: z.object({ valid: z.boolean(), problems: z.array(z.object({ path: z.string(), message: z.string() })) }), ...errors } },
    }, async (req) => {
      try {
        validateSource(sourceOf(req.body));
        return { valid: true, problems: [] };
      } catch (err) {
        const problems = (err as { problems?: Array<{ path: string; message: string }> }).problems;
        if (problems) return { valid: false, problems };
        throw err;
      }
    });

    // The flow model as JSON Schema, for editors' completion (docs/workflows.md).
    app.get(`${BASE}/flows/schema`, {
      preHandler: viewer,
      schema: { tags: ['workflows'], summary: 'The JSON Schema of a flow\'s YAML (derived from the flow model)', params: wsParam, response: { 200: z.record(z.string(), z.unknown()), ...errors } },
    }, async () => flowJsonSchema());

    app.get(`${BASE}/flows`, {
      preHandler: viewer,
      schema: {
        tags: ['workflows'], summary: 'List flows (optionally of a namespace and its children)', params: wsParam,
        querystring: z.object({ namespace: z.string().regex(NAMESPACE_RE).optional(), limit: z.coerce.number().int().min(1).max(500).default(100), offset: z.coerce.number().int().min(0).default(0) }),
        response: {
          200: z.object({
            flows: z.array(z.object({
              namespace: z.string(), id: z.string(), revision: z.number(), updated_at: z.string(), triggers: z.array(z.string()),
              /** The newest execution, if any, and how many there are (counted up to 10,000). */
              last_execution: z.object({ id: z.string(), state: states, created_at: z.string() }).nullable(), runs: z.number(),
            })),
          }),
          ...errors,
        },
      },
    }, async (req) => {
      const ws = await workspace(req);
      const rows = await listFlows(ctx.services().db, ws.id, req.query);
      return {
        flows: rows.map((r) => ({
          namespace: r.namespace, id: r.flow_id, revision: r.revision, updated_at: r.updated_at.toISOString(), triggers: ((r.definition as { triggers?: Array<{ type: string }> }).triggers ?? []).map((t) => t.type),
          last_execution: r.last_execution_id && r.last_state && r.last_execution_at ? { id: r.last_execution_id, state: r.last_state, created_at: r.last_execution_at.toISOString() } : null,
          runs: Number(r.runs),
        })),
      };
    });

    app.get(`${BASE}/flows/:namespace/:id`, {
      preHandler: viewer,
      schema: { tags: ['workflows'], summary: 'One flow, current revision', params: flowParams, response: { 200: flowView, ...errors } },
    }, async (req) => {
      const ws = await workspace(req);
      return flowOut(await getFlow(ctx.services().db, { workspaceId: ws.id, namespace: req.params.namespace, flowId: req.params.id }));
    });

    app.put(`${BASE}/flows/:namespace/:id`, {
      preHandler: editor,
      schema: { tags: ['workflows'], summary: 'Update a flow (a new revision when the source changed)', params: flowParams, body: z.unknown(), response: { 200: flowView, ...errors } },
    }, async (req) => flowOut((await save(req, { namespace: req.params.namespace, flowId: req.params.id })).flow));

    app.delete(`${BASE}/flows/:namespace/:id`, {
      preHandler: editor,
      schema: { tags: ['workflows'], summary: 'Delete a flow (its revisions and executions are kept)', params: flowParams, response: { 204: z.null(), ...errors } },
    }, async (req, reply) => {
      const ws = await workspace(req);
      await deleteFlow(ctx.services(), actorOf(req), { workspaceId: ws.id, namespace: req.params.namespace, flowId: req.params.id }, ws.slug);
      return reply.status(204).send(null);
    });

    app.get(`${BASE}/flows/:namespace/:id/revisions`, {
      preHandler: viewer,
      schema: { tags: ['workflows'], summary: 'Revision history of a flow', params: flowParams, response: { 200: z.object({ revisions: z.array(z.object({ revision: z.number(), deleted: z.boolean(), created_at: z.string() })) }), ...errors } },
    }, async (req) => {
      const ws = await workspace(req);
      const rows = await listRevisions(ctx.services().db, { workspaceId: ws.id, namespace: req.params.namespace, flowId: req.params.id });
      if (rows.length === 0) throw notFound(`flow does not exist: ${req.params.namespace}.${req.params.id}`);
      return { revisions: rows.map((r) => ({ revision: r.revision, deleted: r.deleted, created_at: r.created_at.toISOString() })) };
    });

    // One revision's source, for the console's revision diff (Kestra's revisions carry sources too).
    app.get(`${BASE}/flows/:namespace/:id/revisions/:revision`, {
      preHandler: viewer,
      schema: {
        tags: ['workflows'], summary: 'One revision of a flow with its source',
        params: flowParams.extend({ revision: z.coerce.number().int().min(1).max(2_147_483_647) }),
        response: { 200: z.object({ revision: z.number(), source: z.string(), deleted: z.boolean(), created_at: z.string() }), ...errors },
      },
    }, async (req) => {
      const ws = await workspace(req);
      const r = await getRevision(ctx.services().db, { workspaceId: ws.id, namespace: req.params.namespace, flowId: req.params.id }, req.params.revision);
      return { revision: r.revision, source: r.source, deleted: r.deleted, created_at: r.created_at.toISOString() };
    });

    app.post(`${BASE}/executions/:namespace/:id`, {
      preHandler: editor,
      schema: {
        tags: ['workflows'], summary: 'Start an execution of a flow with inputs; an Idempotency-Key header answers the execution the same key started in the last 24 h; 503 with Retry-After when the start cannot be queued', params: flowParams,
        body: z.object({ inputs: z.record(z.string(), z.unknown()).default({}) }).default({ inputs: {} }),
        response: { 201: executionView, ...errors },
      },
    }, async (req, reply) => {
      const ws = await workspace(req);
      const p = actorOf(req);
      const exec = await createExecution(ctx.services(), {
        workspaceId: ws.id, namespace: req.params.namespace, flowId: req.params.id, inputs: req.body.inputs, trigger: { type: 'api', user: p.email },
        request: true, idempotencyKey: idempotencyKeyOf(req.headers),
      });
      return reply.status(201).send(execOut(exec));
    });

    app.get(`${BASE}/executions`, {
      preHandler: viewer,
      schema: {
        tags: ['workflows'], summary: 'List executions, newest first', params: wsParam,
        querystring: z.object({
          namespace: z.string().optional(), flowId: z.string().optional(), state: states.optional(), limit: z.coerce.number().int().min(1).max(500).default(50),
          before: z.string().datetime().optional(),
          /** Created at or after (a time range's start). */
          after: z.string().datetime().optional(),
          /** The next page: `next_cursor` of the previous answer. */
          cursor: z.string().max(100).regex(EXEC_CURSOR_RE, { message: 'cursor is the next_cursor of a previous answer' }).optional(),
        }),
        response: { 200: z.object({ executions: z.array(executionView), next_cursor: z.string().nullable() }), ...errors },
      },
    }, async (req) => {
      const ws = await workspace(req);
      const rows = await listExecutions(ctx.services(), ws.id, req.query);
      const last = rows[rows.length - 1];
      return { executions: rows.map(execOut), next_cursor: rows.length === req.query.limit && last ? execCursor(last) : null };
    });

    app.get(`${BASE}/executions/stats`, {
      preHandler: viewer,
      schema: {
        tags: ['workflows'], summary: 'Executions created since a time, counted by state per hour or day (at most 92 days)', params: wsParam,
        querystring: z.object({ since: z.string().datetime(), bucket: z.enum(['hour', 'day']).default('hour') }),
        response: { 200: z.object({ buckets: z.array(z.object({ at: z.string(), state: states, count: z.number() })) }), ...errors },
      },
    }, async (req) => {
      const ws = await workspace(req);
      const s = ctx.services();
      return { buckets: await executionStats(s.db, ws.id, new Date(req.query.since), req.query.bucket, s.clock.now()) };
    });

    app.get(`${BASE}/executions/:id`, {
      preHandler: viewer,
      schema: {
        tags: ['workflows'], summary: 'One execution with its task runs and their finished attempts (at most 10,000)', params: execParams,
        response: { 200: executionView.extend({ task_runs: z.array(taskRunView), attempts: z.array(attemptView) }), ...errors },
      },
    }, async (req) => {
      const ws = await workspace(req);
      const { exec, runs } = await getExecution(ctx.services(), ws.id, req.params.id);
      const attempts = await listAttempts(ctx.services(), exec.id);
      return {
        attempts: attempts.map((a) => ({ task_run_id: a.task_run_id, attempt: a.attempt, state: a.state, reason: a.reason, log_lines: a.log_lines, started_at: a.started_at.toISOString(), ended_at: iso(a.ended_at) })),
        ...execOut(exec),
        task_runs: runs.map((r) => ({ id: r.id, task_id: r.task_id, path: r.path, parent_id: r.parent_id, state: r.state, attempt: r.attempt, iteration: r.iteration, outputs: r.outputs ?? {}, error: r.error, started_at: iso(r.started_at), ended_at: iso(r.ended_at) })),
      };
    });

    app.post(`${BASE}/executions/:id/kill`, {
      preHandler: editor,
      schema: { tags: ['workflows'], summary: 'Kill an execution: queued work is cancelled, running tasks stop within kill_poll_ms', params: execParams, response: { 202: z.object({ state: states }), ...errors } },
    }, async (req, reply) => {
      const ws = await workspace(req);
      const state = await requestKill(ctx.services(), ws.id, req.params.id);
      return reply.status(202).send({ state });
    });

    app.get(`${BASE}/executions/:id/logs`, {
      preHandler: viewer,
      schema: {
        tags: ['workflows'], summary: 'Log lines as NDJSON; with follow=true the stream stays open until the execution ends', params: execParams,
        querystring: z.object({ follow: z.enum(['true', 'false']).default('false'), after: bigintCursor.optional(), limit: z.coerce.number().int().min(1).max(10_000).default(1000) }),
      },
    }, async (req, reply) => {
      const s = ctx.services();
      const ws = await workspace(req);
      await getExecution(s, ws.id, req.params.id);
      const follow = req.query.follow === 'true';
      const executionId = req.params.id;
      let after = req.query.after ?? '0';
      const limit = req.query.limit;
      async function* lines() {
        const deadline = Date.now() + 15 * 60_000;
        for (;;) {
          const rows = await s.db.selectFrom('task_logs').select(['id', 'task_run_id', 'attempt', 'at', 'level', 'line'])
            .where('execution_id', '=', executionId).where('id', '>', after).orderBy('id').limit(limit).execute();
          for (const r of rows) { after = r.id; yield `${JSON.stringify({ id: r.id, task_run_id: r.task_run_id, attempt: r.attempt, at: r.at.toISOString(), level: r.level, line: r.line })}\n`; }
          if (!follow) return;
          if (rows.length === limit) continue;
          const e = await s.db.selectFrom('executions').select('ended_at').where('id', '=', executionId).executeTakeFirst();
          if (e?.ended_at || Date.now() > deadline) {
            const tail = await s.db.selectFrom('task_logs').select('id').where('execution_id', '=', executionId).where('id', '>', after).limit(1).execute();
            if (tail.length === 0) return;
            continue;
          }
          await new Promise((r) => setTimeout(r, 250));
        }
      }
      reply.header('content-type', 'application/x-ndjson; charset=utf-8').header('cache-control', 'no-store');
      return reply.send(Readable.from(lines()));
    });

    app.get(`${BASE}/triggers`, {
      preHandler: viewer,
      schema: {
        tags: ['workflows'], summary: 'The triggers of the workspace\'s flows with their last and next fire times (at most 1000)', params: wsParam,
        response: {
          200: z.object({
            scheduler_enabled: z.boolean(), truncated: z.boolean(),
            triggers: z.array(z.object({
              namespace: z.string(), flow_id: z.string(), id: z.string(), type: z.enum(['schedule', 'flow', 'webhook']), disabled: z.boolean(),
              schedule: z.string().nullable(), timezone: z.string().nullable(), condition: z.string().nullable(),
              last_fired_at: z.string().nullable(), last_execution_id: z.string().nullable(), next_fire_at: z.string().nullable(), problem: z.string().nullable(),
            })),
          }),
          ...errors,
        },
      },
    }, async (req) => {
      const ws = await workspace(req);
      const s = ctx.services();
      const { triggers, truncated } = await listTriggers(s, ws.id);
      return {
        scheduler_enabled: s.config.workflow.scheduler_enabled, truncated,
        triggers: triggers.map((t) => ({ ...t, last_fired_at: iso(t.last_fired_at), next_fire_at: iso(t.next_fire_at) })),
      };
    });

    app.get(`${BASE}/executions/:id/files`, {
      preHandler: viewer,
      schema: { tags: ['workflows'], summary: 'Files written by the execution\'s task runs', params: execParams, response: { 200: z.object({ files: z.array(z.object({ path: z.string(), size: z.number() })) }), ...errors } },
    }, async (req) => {
      const ws = await workspace(req);
      await getExecution(ctx.services(), ws.id, req.params.id);
      return { files: await listExecutionFiles(ctx.services(), ws.id, req.params.id) };
    });

    app.get(`${BASE}/executions/:id/files/download`, {
      preHandler: viewer,
      schema: { tags: ['workflows'], summary: 'Download one execution file', params: execParams, querystring: z.object({ path: z.string().min(1).max(1024) }) },
    }, async (req, reply) => {
      const ws = await workspace(req);
      await getExecution(ctx.services(), ws.id, req.params.id);
      const f = await getExecutionFile(ctx.services(), ws.id, req.params.id, req.query.path);
      reply.header('content-type', 'application/octet-stream').header('content-length', String(f.size))
        .header('content-disposition', `attachment; filename="${req.query.path.split('/').pop()!.replace(/[^\w.-]/g, '_')}"`);
      return reply.send(f.body);
    });

    app.get(`${BASE}/namespaces/:namespace/files`, {
      preHandler: viewer,
      schema: { tags: ['workflows'], summary: 'Namespace files (at most workflow.storage.max_namespace_files)', params: nsParams, response: { 200: z.object({ files: z.array(z.object({ path: z.string(), size: z.number(), updated_at: z.string().nullable() })), truncated: z.boolean() }), ...errors } },
    }, async (req) => {
      const ws = await workspace(req);
      return listNamespaceFiles(ctx.services(), ws.id, req.params.namespace);
    });

    app.get(`${BASE}/namespaces/:namespace/files/content`, {
      preHandler: viewer,
      schema: { tags: ['workflows'], summary: 'Download a namespace file', params: nsParams, querystring: z.object({ path: z.string().min(1).max(1024) }) },
    }, async (req, reply) => {
      const ws = await workspace(req);
      const f = await getNamespaceFile(ctx.services(), ws.id, req.params.namespace, req.query.path);
      reply.header('content-type', 'application/octet-stream').header('content-length', String(f.size));
      return reply.send(f.body);
    });

    app.put(`${BASE}/namespaces/:namespace/files/content`, {
      preHandler: editor,
      schema: { tags: ['workflows'], summary: 'Upload a namespace file (raw body, application/octet-stream; at most workflow.storage.max_file_bytes)', params: nsParams, querystring: z.object({ path: z.string().min(1).max(1024) }), response: { 200: z.object({ path: z.string(), size: z.number() }), ...errors, 413: errorSchema } },
    }, async (req) => {
      const ws = await workspace(req);
      if (!(req.body instanceof Readable)) throw new DomainError('bad_request', 'send the file as the raw body with Content-Type: application/octet-stream');
      const { size } = await putNamespaceFile(ctx.services(), ws.id, req.params.namespace, req.query.path, req.body, { actor: actorOf(req), workspace: ws.slug });
      return { path: req.query.path, size };
    });

    app.delete(`${BASE}/namespaces/:namespace/files/content`, {
      preHandler: editor,
      schema: { tags: ['workflows'], summary: 'Delete a namespace file', params: nsParams, querystring: z.object({ path: z.string().min(1).max(1024) }), response: { 204: z.null(), ...errors } },
    }, async (req, reply) => {
      const ws = await workspace(req);
      await deleteNamespaceFile(ctx.services(), ws.id, req.params.namespace, req.query.path, { actor: actorOf(req), workspace: ws.slug });
      return reply.status(204).send(null);
    });

    app.get(`${BASE}/secrets`, {
      preHandler: viewer,
      schema: { tags: ['workflows'], summary: 'Names of the workspace secrets (values are never returned)', params: wsParam, response: { 200: z.object({ secrets: z.array(z.object({ name: z.string(), updated_at: z.string() })) }), ...errors } },
    }, async (req) => {
      const ws = await workspace(req);
      const rows = await listWorkflowSecrets(ctx.services(), ws.id);
      return { secrets: rows.map((r) => ({ name: r.name, updated_at: r.updated_at.toISOString() })) };
    });

    app.put(`${BASE}/secrets/:name`, {
      preHandler: admin,
      schema: { tags: ['workflows'], summary: 'Set a workspace secret (sealed with secrets.master_key)', params: wsParam.extend({ name: z.string().min(1).max(128) }), body: z.object({ value: z.string().max(65_536) }), response: { 204: z.null(), ...errors } },
    }, async (req, reply) => {
      const ws = await workspace(req);
      await putWorkflowSecret(ctx.services(), actorOf(req), ws, req.params.name, req.body.value);
      return reply.status(204).send(null);
    });

    app.delete(`${BASE}/secrets/:name`, {
      preHandler: admin,
      schema: { tags: ['workflows'], summary: 'Delete a workspace secret', params: wsParam.extend({ name: z.string().min(1).max(128) }), response: { 204: z.null(), ...errors } },
    }, async (req, reply) => {
      const ws = await workspace(req);
      await deleteWorkflowSecret(ctx.services(), actorOf(req), ws, req.params.name);
      return reply.status(204).send(null);
    });
  };
}
