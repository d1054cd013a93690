// One evaluation of an alert or report (docs/alerts.md "Evaluation"): run its SQL through
// runQuery, judge the condition (alerts) or build the content (reports), move the alert's state,
// and enqueue the notifications. Every evaluation is recorded, one row per schedule slot, so a
// redelivered job finds its row and does nothing twice.
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { Services } from '../services.js';
import { allows } from '../access/access.js';
import type { AutomationRow, EvaluationRow } from '../db/automation-types.js';
import { runQuery, type RunQueryInput } from '../queries/run.js';
import type { EngineResult } from '../queries/types.js';
import { judge, transition, type Condition, type Notification, type Outcome } from './conditions.js';
import { enqueueDeliveries, type Notice } from './delivery.js';
import { linkOf } from './automations.js';
import { renderScreenshot } from './render-client.js';

/** How evaluation runs SQL (runQuery by default; tests may hand rows in). */
export type Querier = (input: RunQueryInput) => Promise<EngineResult>;

/** Alerts and reports read: their SQL runs with ws_viewer's statements, whoever saved it. */
export const AUTOMATION_ROLE = 'ws_viewer' as const;
/** A CSV report's text is cut at this many bytes (the rest of the rows are left out, and it says so). */
export const MAX_REPORT_BYTES = 4 * 1024 * 1024;

export interface EvaluateOptions {
  scheduledFor: Date; manual?: boolean; query?: Querier; render?: typeof renderScreenshot;
  /** The evaluation row a manual run recorded when it was asked for (recordManualRun): this run completes it. */
  evaluationId?: string;
}

/** A pending evaluation older than this did not finish (its worker stopped, its job was lost): it is ended as an error. */
export const EVALUATION_LOST_AFTER_MS = 15 * 60_000;

/**
 * Records a manual run ("Run now") before its job is queued, so the page shows it at once as
 * running, and every run ends in an outcome or an error shown there (never in nothing).
 */
export async function recordManualRun(services: Services, automationId: string, at: Date): Promise<string> {
  const id = randomUUID();
  await services.db.insertInto('automation_evaluations').values({ id, automation_id: automationId, scheduled_for: at, manual: true, started_at: at }).execute();
  return id;
}

/** Ends a pending evaluation as an error with `reason` (a run that could not be queued, failed or was lost). */
export async function failEvaluation(services: Services, evaluationId: string, reason: string): Promise<void> {
  await services.db.updateTable('automation_evaluations').set({ ended_at: services.clock.now(), outcome: 'error', error: reason.slice(0, 2000) })
    .where('id', '=', evaluationId).where('ended_at', 'is', null).execute();
}

/** Ends the evaluations left pending past EVALUATION_LOST_AFTER_MS (the schedule tick calls it); answers how many. */
export async function endLostEvaluations(services: Services): Promise<number> {
  const now = services.clock.now();
  const r = await services.db.updateTable('automation_evaluations')
    .set({ ended_at: now, outcome: 'error', error: 'the evaluation did not finish: its worker stopped or its job was lost; run it again' })
    .where('ended_at', 'is', null).where('started_at', '<', new Date(now.getTime() - EVALUATION_LOST_AFTER_MS)).executeTakeFirst();
  return Number(r.numUpdatedRows);
}

function csvCell(v: unknown): string {
  const s = v === null || v === undefined ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v);
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/** RFC 4180 CSV of a result, cut at MAX_REPORT_BYTES on a row boundary. */
export function toCsv(r: EngineResult): { csv: string; cut: boolean } {
  let out = r.columns.map((c) => csvCell(c.name)).join(',') + '\r\n';
  for (const row of r.rows) {
    const line = row.map(csvCell).join(',') + '\r\n';
    if (Buffer.byteLength(out) + Buffer.byteLength(line) > MAX_REPORT_BYTES) return { csv: out, cut: true };
    out += line;
  }
  return { csv: out, cut: false };
}

const describe = (c: Condition) => `${c.type === 'row_count' ? 'row count' : c.column ?? 'value'} ${c.op} ${c.threshold}`;

function alertNotice(a: AutomationRow, ws: string, link: string, n: Exclude<Notification, null>, value: number | null, error: string | null, at: Date): Notice {
  const cond = a.spec as unknown as Condition;
  const text = n === 'triggered' ? `Alert "${a.name}" is firing: ${describe(cond)} (value ${value}). ${link}`
    : n === 'recovered' ? `Alert "${a.name}" recovered: ${describe(cond)} no longer holds (value ${value}). ${link}`
    : `Alert "${a.name}" could not be evaluated: ${error}. ${link}`;
  return {
    event: `alert.${n}`, text,
    body: { event: `alert.${n}`, workspace: ws, alert: { id: a.id, name: a.name, url: link }, condition: cond, value, error, evaluated_at: at.toISOString() },
  };
}

/** Runs one evaluation; returns its record (the existing one when this slot was already evaluated). */
export async function evaluate(services: Services, automationId: string, opts: EvaluateOptions): Promise<EvaluationRow | undefined> {
  const log = services.logging.module('svc::automation');
  const a = await services.db.selectFrom('automations').selectAll().where('id', '=', automationId).executeTakeFirst();
  if (!a) return undefined;
  const ws = await services.db.selectFrom('workspaces').select('slug').where('id', '=', a.workspace_id).executeTakeFirstOrThrow();
  const now = services.clock.now();
  const evalId = opts.evaluationId ?? randomUUID();
  if (opts.evaluationId) {
    // the row the manual run recorded: this run takes it unless it already ended (a redelivery)
    const taken = await services.db.updateTable('automation_evaluations').set({ started_at: now })
      .where('id', '=', evalId).where('automation_id', '=', a.id).where('ended_at', 'is', null).returning('id').executeTakeFirst();
    if (!taken) return services.db.selectFrom('automation_evaluations').selectAll().where('id', '=', evalId).executeTakeFirst();
  } else {
    const inserted = await services.db.insertInto('automation_evaluations')
      .values({ id: evalId, automation_id: a.id, scheduled_for: opts.scheduledFor, manual: opts.manual ?? false, started_at: now })
      .onConflict((oc) => oc.columns(['automation_id', 'scheduled_for', 'manual']).doNothing()).executeTakeFirst();
    if (Number(inserted.numInsertedOrUpdatedRows ?? 0n) === 0) {
      return services.db.selectFrom('automation_evaluations').selectAll().where('automation_id', '=', a.id)
        .where('scheduled_for', '=', opts.scheduledFor).where('manual', '=', opts.manual ?? false).executeTakeFirst();
    }
  }
  try {
    return await run(services, a, ws.slug, evalId, now, opts);
  } catch (err) {
    // whatever stopped it, the evaluation ends as an error the page shows (when the database lets it)
    await failEvaluation(services, evalId, `the evaluation failed: ${(err as Error).message}`).catch((e: Error) => log.warn({ evaluation: evalId, err: e.message }, 'recording a failed evaluation failed: the tick ends it later'));
    throw err;
  }
}

async function run(services: Services, a: AutomationRow, wsSlug: string, evalId: string, now: Date, opts: EvaluateOptions): Promise<EvaluationRow | undefined> {
  const log = services.logging.module('svc::automation');
  const ws = { slug: wsSlug };
  const query = opts.query ?? ((input) => runQuery(services.queryEngines, services.config, input));
  const link = linkOf(services.config, ws.slug, a);
  const spec = a.spec as { type: string; path?: string };
  let result: EngineResult | undefined;
  let error: string | null = null;
  if (a.sql.trim() !== '') {
    try {
      // The SQL runs as the person the alert or report runs as (who last set what it does), read
      // only: the workspace's policies for that person apply (docs/alerts.md "Who a report renders as").
      const snap = a.run_as ? await services.access.forUser(a.run_as) : null;
      if (!snap?.user || !allows(snap, { workspace: ws.slug, role: 'ws_viewer' })) throw new Error(`the ${a.kind} runs as the person who last set its SQL or recipients, who is no longer a member of workspace ${ws.slug}: an editor who saves it again makes it run as them`);
      result = await query({ workspace: a.workspace_id, engine: a.engine, sql: a.sql, principal: { name: snap.user.email, role: AUTOMATION_ROLE, groups: snap.groups.map((g) => g.name) } });
    } catch (err) {
      error = (err as Error).message.slice(0, 2000);
    }
  }

  let outcome: Outcome | 'delivered';
  let value: number | null = null;
  let notification: string | null = null;
  if (a.kind === 'alert') {
    if (result) {
      try {
        const j = judge(a.spec as unknown as Condition, result);
        value = j.value;
        outcome = j.triggered ? 'triggered' : 'ok';
      } catch (err) {
        error = (err as Error).message;
        outcome = 'error';
      }
    } else outcome = 'error';
    // The state moves under a row lock: a manual run and a scheduled one cannot both notify. The
    // deliveries are enqueued after the commit, so their jobs never run before their rows exist.
    const notify = await services.db.transaction().execute(async (tx) => {
      const cur = await tx.selectFrom('automations').select(['state', 'last_notified_at']).where('id', '=', a.id).forUpdate().executeTakeFirst();
      if (!cur) return null;
      const next = transition({ state: cur.state, lastNotifiedAt: cur.last_notified_at }, outcome as Outcome, now, a.grace_secs);
      await tx.updateTable('automations').set({
        state: next.state, last_evaluated_at: now,
        ...(next.state !== cur.state ? { state_since: now } : {}),
        ...(next.notify === 'triggered' ? { last_notified_at: now } : {}),
      }).where('id', '=', a.id).execute();
      return next.notify;
    });
    if (notify) {
      notification = notify;
      await enqueueDeliveries(services, a, evalId, alertNotice(a, ws.slug, link, notify, value, error, now));
    }
  } else {
    let image: Buffer | undefined;
    if (spec.type === 'screenshot') {
      try {
        image = await (opts.render ?? renderScreenshot)(services, a, ws.slug, spec.path ?? '/');
      } catch (err) {
        error = (err as Error).message.slice(0, 2000);
      }
    }
    if ((spec.type !== 'screenshot' && !result) || (spec.type === 'screenshot' && !image)) outcome = 'error';
    else {
      const body: Record<string, unknown> = { event: 'report', workspace: ws.slug, report: { id: a.id, name: a.name, url: link }, scheduled_for: opts.scheduledFor.toISOString() };
      let text = `Report "${a.name}"`;
      if (result && spec.type === 'csv') {
        const { csv, cut } = toCsv(result);
        body.format = 'csv';
        body.csv = csv;
        body.truncated = result.truncated || cut;
        text += `: ${result.rows.length} rows${body.truncated ? ' (truncated)' : ''}. ${link}`;
      } else if (result) {
        body.format = 'table';
        body.columns = result.columns;
        body.rows = result.rows;
        body.truncated = result.truncated;
        text += `: ${result.rows.length} rows. ${link}`;
      } else {
        body.format = 'screenshot';
        body.path = (spec as { path?: string }).path;
        body.image = { content_type: 'image/png', data_base64: image!.toString('base64') };
        text += ` (screenshot of ${body.path as string}). ${link}`;
      }
      await enqueueDeliveries(services, a, evalId, { event: 'report', body, text });
      notification = 'report';
      outcome = 'delivered';
    }
    await services.db.updateTable('automations').set({ last_evaluated_at: now }).where('id', '=', a.id).execute();
  }

  const done = await services.db.updateTable('automation_evaluations').set({
    ended_at: services.clock.now(), outcome, value: value === null ? null : JSON.stringify(value), error, notification,
  }).where('id', '=', evalId).returningAll().executeTakeFirst();
  services.metrics.automationEvaluations.inc({ kind: a.kind, outcome });
  log.info({ automation: a.id, kind: a.kind, outcome, notification, err: error ?? undefined }, `${a.kind} evaluated`);
  // Evaluations beyond the newest 1000 of an automation are pruned as they go.
  await sql`DELETE FROM automation_evaluations WHERE automation_id = ${a.id} AND id IN (
    SELECT id FROM automation_evaluations WHERE automation_id = ${a.id} ORDER BY started_at DESC OFFSET 1000)`.execute(services.db);
  return done;
}
