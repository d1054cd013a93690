// Delivery of notifications (docs/alerts.md "Delivery"): one row in automation_deliveries per
// recipient and notification, sent by a BullMQ job with retries and exponential back-off, each
// attempt's outcome written to the row. Every send goes through the SSRF gate (outbound.ts).
//
//   webhook  POST of the JSON payload, signed: Svc-Signature (signing.ts), Svc-Delivery (the
//            delivery id, the same on every retry, for receivers to drop duplicates), Svc-Event
//   slack    POST {"text": ...} in Slack's incoming-webhook format (Mattermost, Rocket.Chat and
//            Discord's /slack endpoint take it too)
//
// Retried: network errors, time-outs, 408, 429 and 5xx. Not retried: a refusal of the gate and
// other 4xx answers (the receiver said no; sending the same request again would not change it).
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { Services } from '../services.js';
import type { AutomationRow, DeliveryRow } from '../db/automation-types.js';
import { QUEUES, jobOptions } from '../queue/queues.js';
import { send, TargetRefused } from './outbound.js';
import { signatureHeader, SIGNATURE_HEADER } from './signing.js';
import { gateOf, unsealRecipientUrl, unsealSigningSecret, type StoredRecipient } from './automations.js';

export const DELIVERY_TIMEOUT_MS = 10_000;
export const MAX_DELIVERIES_KEPT = 1000;
/** A delivery pending this long without a job is re-enqueued by the tick (its enqueue was lost). */
export const LOST_DELIVERY_MS = 15 * 60_000;

/** What a notification says; the channel decides how it is written. */
export interface Notice {
  event: string;
  /** The webhook JSON body (without the delivery id, added per delivery). */
  body: Record<string, unknown>;
  /** The one-line text for chat channels. */
  text: string;
}

export class DeliveryError extends Error {
  constructor(message: string, readonly retry: boolean) { super(message); }
}

function payloadFor(channel: StoredRecipient['type'], deliveryId: string, notice: Notice): Record<string, unknown> {
  return channel === 'slack' ? { text: notice.text } : { id: deliveryId, ...notice.body };
}

/** Records one pending delivery per recipient and enqueues their jobs. */
export async function enqueueDeliveries(services: Services, a: AutomationRow, evaluationId: string | null, notice: Notice): Promise<string[]> {
  const ids = await recordDeliveries(services, a, evaluationId, notice);
  await addDeliveryJobs(services, ids);
  return ids;
}

/** The job of each delivery; its id is the delivery's, so adding it again while it exists is a no-op. */
async function addDeliveryJobs(services: Services, ids: string[]): Promise<void> {
  await services.queues.get(QUEUES.deliveries).addBulk(ids.map((id) => ({
    name: 'deliver', data: { deliveryId: id },
    opts: jobOptions(QUEUES.deliveries, { jobId: `delivery-${id}` }),
  })));
}

/**
 * Deliveries still pending long after their last change whose job is gone (a process died between
 * recording and enqueueing): enqueued again. Called by the tick; returns how many.
 */
export async function requeueLostDeliveries(services: Services): Promise<number> {
  const cutoff = new Date(services.clock.now().getTime() - LOST_DELIVERY_MS);
  const stale = await services.db.selectFrom('automation_deliveries').select('id')
    .where('status', '=', 'pending').where('updated_at', '<', cutoff).limit(100).execute();
  const queue = services.queues.get(QUEUES.deliveries);
  const lost: string[] = [];
  for (const d of stale) if (!(await queue.getJob(`delivery-${d.id}`))) lost.push(d.id);
  if (lost.length) await addDeliveryJobs(services, lost);
  return lost.length;
}

/** Records one pending delivery per recipient (test-send attempts them at once, without the queue). */
export async function recordDeliveries(services: Services, a: AutomationRow, evaluationId: string | null, notice: Notice): Promise<string[]> {
  const ids: string[] = [];
  const recipients = a.recipients as StoredRecipient[];
  for (let i = 0; i < recipients.length; i++) {
    const r = recipients[i]!;
    const id = randomUUID();
    await services.db.insertInto('automation_deliveries').values({
      id, automation_id: a.id, evaluation_id: evaluationId, channel: r.type, target: r.target, recipient: i,
      event: notice.event, payload: JSON.stringify(payloadFor(r.type, id, notice)), status: 'pending',
      created_at: services.clock.now(), updated_at: services.clock.now(),
    }).execute();
    ids.push(id);
  }
  // The log keeps the newest MAX_DELIVERIES_KEPT deliveries of each alert or report.
  await sql`DELETE FROM automation_deliveries WHERE automation_id = ${a.id} AND id IN (
    SELECT id FROM automation_deliveries WHERE automation_id = ${a.id} ORDER BY created_at DESC OFFSET ${MAX_DELIVERIES_KEPT})`.execute(services.db);
  return ids;
}

/** Sends one delivery now; returns the HTTP status or throws DeliveryError / TargetRefused. */
async function sendDelivery(services: Services, a: AutomationRow, d: DeliveryRow): Promise<number> {
  const url = unsealRecipientUrl(services, a, d.recipient);
  const body = JSON.stringify(d.payload);
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (d.channel === 'webhook') {
    headers[SIGNATURE_HEADER] = signatureHeader(unsealSigningSecret(services, a), body, services.clock.now().getTime() / 1000);
    headers['svc-delivery'] = d.id;
    headers['svc-event'] = d.event;
  }
  let status: number;
  let answer: string;
  try {
    const res = await send(gateOf(services), { url, method: 'POST', headers, body, timeoutMs: DELIVERY_TIMEOUT_MS });
    status = res.status;
    answer = res.body;
  } catch (err) {
    if (err instanceof TargetRefused) throw err;
    throw new DeliveryError((err as Error).message, true);
  }
  if (status >= 200 && status < 300) return status;
  const retry = status === 408 || status === 429 || status >= 500;
  throw Object.assign(new DeliveryError(`the receiver answered ${status}${answer ? `: ${answer.slice(0, 200)}` : ''}`, retry), { status });
}

export interface AttemptResult { status: DeliveryRow['status']; httpStatus: number | null; error: string | null; retry: boolean }

/**
 * One attempt of a delivery (the job's processor, and test-send directly). Records the outcome;
 * `retry` tells the caller whether another attempt may succeed. `final` marks the last attempt.
 */
export async function attemptDelivery(services: Services, deliveryId: string, final: boolean): Promise<AttemptResult> {
  const d = await services.db.selectFrom('automation_deliveries').selectAll().where('id', '=', deliveryId).executeTakeFirst();
  if (!d || d.status !== 'pending') return { status: d?.status ?? 'failed', httpStatus: d?.http_status ?? null, error: d?.error ?? 'no such delivery', retry: false };
  const a = await services.db.selectFrom('automations').selectAll().where('id', '=', d.automation_id).executeTakeFirst();
  let result: AttemptResult;
  if (!a) {
    result = { status: 'failed', httpStatus: null, error: 'the alert or report was deleted', retry: false };
  } else {
    try {
      const status = await sendDelivery(services, a, d);
      result = { status: 'delivered', httpStatus: status, error: null, retry: false };
    } catch (err) {
      if (err instanceof TargetRefused) result = { status: 'refused', httpStatus: null, error: err.message, retry: false };
      else if (err instanceof DeliveryError) {
        const again = err.retry && !final;
        result = { status: again ? 'pending' : 'failed', httpStatus: (err as { status?: number }).status ?? null, error: err.message, retry: again };
      } else {
        // Unsealing failed (a changed master key) or the database: not something a retry fixes soon.
        result = { status: 'failed', httpStatus: null, error: (err as Error).message, retry: false };
      }
    }
  }
  // The payload is kept while attempts remain; a final outcome drops it (a CSV or an image can be
  // megabytes), and the row stays as the log of what was sent where and how it went.
  await services.db.updateTable('automation_deliveries').set((eb) => ({
    status: result.status, http_status: result.httpStatus, error: result.error,
    attempts: eb('attempts', '+', 1), updated_at: services.clock.now(),
    ...(result.status === 'pending' ? {} : { payload: '{}' }),
  })).where('id', '=', deliveryId).execute();
  services.metrics.automationDeliveries.inc({ channel: d.channel, status: result.status });
  const log = services.logging.module('svc::automation');
  const fields = { delivery: deliveryId, automation: d.automation_id, channel: d.channel, target: d.target, event: d.event, status: result.status, http_status: result.httpStatus };
  if (result.status === 'delivered') log.info(fields, 'notification delivered');
  else log.warn({ ...fields, err: result.error }, result.retry ? 'notification not delivered; retried with back-off' : 'notification not delivered');
  return result;
}
