// Server-side scan planning routes of the Iceberg REST catalog under /catalog/v1/{prefix}
// (planTableScan, fetchPlanningResult, cancelPlanning, fetchScanTasks): each checks what a table
// load checks (the read right in the workspace, then the policies' select deny items on the
// table), finds the table in the workspace the path names, and leaves the rest to
// src/catalog/scan-plans.ts. A plan id or plan task of another table or workspace is a 404.
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.js';
import { catalogErrors, nameParam, namespaceParam, prefixParam, scope } from './catalog-common.js';
import { sendJson } from './catalog-tables.js';
import { checkName, parseNamespace } from '../../../catalog/names.js';
import { getTableRef } from '../../../catalog/tables.js';
import { badRequest, IcebergError } from '../../../catalog/errors.js';
import { parseScanRequest } from '../../../catalog/scan-request.js';
import { cancelPlanning, fetchPlanningResult, fetchScanTasks, planTableScan } from '../../../catalog/scan-plans.js';

const tags = ['catalog'];
const loose = (description: string) => z.looseObject({}).meta({ description });
const pTable = z.object({ prefix: prefixParam, namespace: namespaceParam, table: nameParam });
const pPlan = pTable.extend({ planId: z.string().min(1).max(200).meta({ description: 'the plan id planTableScan answered' }) });
const errors = { ...catalogErrors, 503: catalogErrors[400] };

type TableParams = z.infer<typeof pTable>;

async function tableOf(ctx: AppContext, req: FastifyRequest, p: TableParams, what: string) {
  const { s, wh } = await scope(ctx, req, p.prefix, 'read', what, { namespace: p.namespace, name: p.table, op: 'read' });
  const row = await getTableRef(s.db, wh, parseNamespace(p.namespace), checkName(p.table));
  return { s, wh, row };
}

/** A full replica asks the client to come back (503 with Retry-After), as every unavailable dependency does. */
function retryLater(reply: FastifyReply, err: unknown): never {
  if (err instanceof IcebergError && err.status === 503) reply.header('retry-after', '1');
  throw err;
}

export function catalogScanRoutes(ctx: AppContext): FastifyPluginAsyncZod {
  return async (app) => {
    const base = '/catalog/v1/:prefix/namespaces/:namespace/tables/:table';

    app.post(`${base}/plan`, {
      config: { csrf: false },
      schema: {
        operationId: 'planTableScan', tags, params: pTable, body: loose('PlanTableScanRequest').optional(),
        summary: 'Plan a scan of a table on the server (Iceberg REST planTableScan): snapshot-id or an incremental start/end, select, filter pushed into partition and column-bound pruning, residual filter per task; a large table is answered with plan tasks; a plan longer than catalog.plan_wait_ms is answered `submitted`',
        response: { 200: loose('PlanTableScanResult'), ...errors },
      },
    }, async (req, reply) => {
      const { s, wh, row } = await tableOf(ctx, req, req.params, 'planning a scan');
      const q = parseScanRequest(req.body);
      try {
        return sendJson(reply, 200, await planTableScan(s, wh, row, q));
      } catch (err) {
        return retryLater(reply, err);
      }
    });

    app.get(`${base}/plan/:planId`, {
      config: { csrf: false },
      schema: {
        operationId: 'fetchPlanningResult', tags, params: pPlan,
        summary: 'The state of a plan (Iceberg REST fetchPlanningResult): submitted, completed with its tasks, or cancelled; a failed plan answers its error. Served by the replica that made the plan',
        response: { 200: loose('FetchPlanningResult'), ...errors },
      },
    }, async (req, reply) => {
      const { s, wh, row } = await tableOf(ctx, req, req.params, 'fetching a scan plan');
      return sendJson(reply, 200, fetchPlanningResult(s, wh, row, req.params.planId));
    });

    app.delete(`${base}/plan/:planId`, {
      config: { csrf: false },
      schema: {
        operationId: 'cancelPlanning', tags, params: pPlan,
        summary: 'Cancel a plan (Iceberg REST cancelPlanning): planning stops, its answer is freed and its plan tasks are refused',
        response: { 204: z.null(), ...errors },
      },
    }, async (req, reply) => {
      const { s, wh, row } = await tableOf(ctx, req, req.params, 'cancelling a scan plan');
      cancelPlanning(s, wh, row, req.params.planId);
      return reply.status(204).send(null);
    });

    app.post(`${base}/tasks`, {
      config: { csrf: false },
      schema: {
        operationId: 'fetchScanTasks', tags, params: pTable, body: loose('FetchScanTasksRequest'),
        summary: 'The file scan tasks of a plan task (Iceberg REST fetchScanTasks); any replica serves a plan task of its own service',
        response: { 200: loose('FetchScanTasksResult'), ...errors },
      },
    }, async (req, reply) => {
      const { s, wh, row } = await tableOf(ctx, req, req.params, 'fetching scan tasks');
      const token = (req.body as Record<string, unknown>)['plan-task'];
      if (typeof token !== 'string' || token === '') throw badRequest('plan-task must be the string a plan answered');
      return sendJson(reply, 200, await fetchScanTasks(s, wh, row, token));
    });
  };
}
