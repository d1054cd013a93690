// The schedule ticker of alerts and reports (SPEC 8 automation.enabled, tick_interval_secs;
// docs/alerts.md "Schedules").
//
// A BullMQ job scheduler adds one `automation-tick` job every tick_interval_secs, one per period
// however many replicas upsert it. The tick claims each due slot with one conditional UPDATE
// (`... SET next_fire_at = <next> WHERE id = ? AND next_fire_at = <value read>`), so of two ticks
// racing (two replicas, or a tick redelivered after a stall) exactly one fires a slot, and enqueues
// one `evaluate` job whose id names the slot (a second add of the same id is a no-op).
//
// Catch-up: slots missed while nothing ran (a restart, an outage) fire once, the latest one due,
// never as a backlog; the slots before it are skipped and the next one is computed from it. So a
// replica starting after a day down evaluates each alert once, not once per missed minute.
import { Cron } from 'croner';
import type { Services } from '../services.js';
import { QUEUES, jobOptions } from '../queue/queues.js';
import { cronFor } from '../workflows/triggers.js';
import { requeueLostDeliveries } from './delivery.js';
import { endLostEvaluations } from './evaluate.js';

/** Due schedules claimed per tick at most; the rest are claimed by the next tick. */
export const MAX_CLAIMS_PER_TICK = 500;

/** The latest slot at or before `now`, no earlier than `first` (itself a slot at or before now). */
export function latestSlot(cron: Cron, first: Date, now: Date): Date {
  const prev = cron.previousRuns(1, new Date(now.getTime() + 1))[0];
  return prev && prev.getTime() > first.getTime() && prev.getTime() <= now.getTime() ? prev : first;
}

export interface TickResult { fired: Array<{ id: string; slot: string }>; skipped: number; requeued: number }

export async function processAutomationTick(services: Services): Promise<TickResult> {
  const log = services.logging.module('svc::automation');
  const now = services.clock.now();
  const result: TickResult = { fired: [], skipped: 0, requeued: 0 };
  const due = await services.db.selectFrom('automations').select(['id', 'cron', 'timezone', 'next_fire_at'])
    .where('enabled', '=', true).where('next_fire_at', '<=', now)
    .orderBy('next_fire_at').limit(MAX_CLAIMS_PER_TICK).execute();
  const queue = services.queues.get(QUEUES.automation);
  for (const a of due) {
    const cron = cronFor(a.cron, a.timezone);
    if (typeof cron === 'string' || !a.next_fire_at) {
      // Saved schedules are validated; one that no longer parses (a time zone removed from the
      // runtime's database) stops rather than being claimed on every tick.
      await services.db.updateTable('automations').set({ next_fire_at: null }).where('id', '=', a.id).execute();
      log.warn({ automation: a.id, problem: cron }, 'alert or report schedule stopped: its cron or time zone no longer parses');
      continue;
    }
    const slot = latestSlot(cron, a.next_fire_at, now);
    const claimed = await services.db.updateTable('automations').set({ next_fire_at: cron.nextRun(slot), last_fired_at: slot })
      .where('id', '=', a.id).where('next_fire_at', '=', a.next_fire_at).where('enabled', '=', true)
      .returning('id').executeTakeFirst();
    if (!claimed) { result.skipped++; continue; } // another tick fired this slot
    await queue.add('evaluate', { automationId: a.id, slot: slot.toISOString() }, jobOptions(QUEUES.automation, { jobId: `evaluate-${a.id}-${slot.getTime()}` }));
    if (slot.getTime() !== a.next_fire_at.getTime()) log.info({ automation: a.id, from: a.next_fire_at.toISOString(), slot: slot.toISOString() }, 'missed slots skipped: only the latest fires');
    result.fired.push({ id: a.id, slot: slot.toISOString() });
  }
  result.requeued = await requeueLostDeliveries(services);
  const lost = await endLostEvaluations(services);
  if (lost) log.warn({ count: lost }, 'evaluations that did not finish ended as errors');
  if (result.requeued) log.warn({ count: result.requeued }, 'deliveries whose job was lost enqueued again');
  return result;
}
