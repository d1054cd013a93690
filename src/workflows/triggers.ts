// Triggers (workflow.scheduler_enabled): cron schedules with time zones and flow triggers.
//
// One BullMQ queue, `triggers`, carries both:
//   trigger-tick     a job scheduler adds one every workflow.trigger_interval_secs (one job per
//                    period across all replicas); the processor fires the schedule triggers due
//   execution-ended  added by the orchestrator when an execution ends; the processor starts the
//                    flows whose `flow` triggers match it
//
// Schedules keep their state in `trigger_states` (next_fire_at, last_fired_at). A slot is claimed
// with one conditional UPDATE (`... WHERE next_fire_at = <value read> AND next_fire_at <= now`), so
// however many replicas or ticks race for it, exactly one fires it. Slots missed while nothing ran
// fire once (the latest one due), not as a backlog. A slot is fired at most once: a process dying
// between the claim and the execution's INSERT loses that slot.
//
// The state is checked against the trigger's current cron and time zone on every tick (without a
// stored copy): next_fire_at must be the first slot after last_fired_at (or, before the first
// fire, the first slot to come). When it is not, the cron or time zone changed, and the trigger
// starts again from now (slots of the new expression already past do not fire).
import type { Cron } from 'croner';
import { sql } from 'kysely';
import type { Services } from '../services.js';
import { DomainError } from '../errors.js';
import { createExecution, TERMINAL_EXECUTION } from './executions.js';
import type { FlowDef, TriggerDef } from './flow.js';
import { parseCron } from './trigger-validation.js';
import { TtlCache } from '../util/ttl-cache.js';

// Validation is pure and lives apart (flows.ts validates at save time without the trigger loop).
export { validTimezone, parseCron, validateTriggers } from './trigger-validation.js';

type FlowTrigger = Extract<TriggerDef, { type: 'flow' }>;

/** Flow triggers chained deeper than this (A ends -> B starts -> B ends -> ...) stop firing. */
export const MAX_FLOW_TRIGGER_DEPTH = 32;

// ---------------------------------------------------------------------------------------------
// Schedules
// ---------------------------------------------------------------------------------------------

/**
 * Parsed schedules by time zone and expression. A saved expression is as long as its flow's body
 * allows, and a problem repeats it: at most 4 MiB (estimated), oldest first; an entry larger than
 * that is parsed again on each use.
 */
export const CRON_CACHE_BYTES = 4 * 1024 * 1024;
const cronCache = new TtlCache<string, Cron | string>(10_000, Infinity, Date.now, {
  max: CRON_CACHE_BYTES, sizeOf: (k, c) => 256 + 2 * k.length + (typeof c === 'string' ? 2 * c.length : 2_048 + 2 * k.length),
});
/** Bytes the parsed schedules hold, as estimated (for tests). */
export const cronCacheBytes = () => cronCache.byteSize;

/** The parsed schedule of an expression (cached), or the problem with it. */
export function cronFor(expr: string, timezone: string): Cron | string {
  const k = `${timezone}\u0000${expr}`;
  let c = cronCache.get(k);
  if (c === undefined) {
    c = parseCron(expr, timezone);
    cronCache.set(k, c);
  }
  return c;
}

/**
 * Invalid schedules already reported by this process (flows saved before validation caught them),
 * by trigger and problem: 1 MiB, oldest first (a problem forgotten is reported once more).
 */
const warned = new TtlCache<string, true>(10_000, Infinity, Date.now, { max: 1024 * 1024, sizeOf: (k) => 128 + 2 * k.length });

const ms = (d: Date | null | undefined) => (d ? d.getTime() : null);

/** The latest slot at or before `now`, at or after `first` (itself a slot, <= now). */
function latestDue(cron: Cron, first: Date, now: Date): Date {
  const prev = cron.previousRuns(1, new Date(now.getTime() + 1))[0];
  return prev && prev.getTime() > first.getTime() && prev.getTime() <= now.getTime() ? prev : first;
}

/** Whether the stored state belongs to this cron (else the cron or time zone changed). */
function consistent(cron: Cron, next: Date | null, last: Date | null, now: Date): boolean {
  if (last) return ms(cron.nextRun(last)) === ms(next);
  if (!next) return cron.nextRun(now) === null;
  const isSlot = ms(cron.nextRun(new Date(next.getTime() - 1))) === next.getTime();
  const upcoming = cron.nextRun(now);
  return isSlot && (upcoming === null || upcoming.getTime() >= next.getTime());
}

export interface TickResult { fired: Array<{ executionId: string; namespace: string; flowId: string; triggerId: string; date: string }>; reset: number; created: number }

/** One trigger tick: brings trigger_states in line with the flows, then fires the slots due. */
export async function processTriggerTick(services: Services): Promise<TickResult> {
  const log = services.logging.module('svc::workflows::triggers');
  const now = services.clock.now();
  const result: TickResult = { fired: [], reset: 0, created: 0 };
  const flows = await services.db.selectFrom('flows').select(['workspace_id', 'namespace', 'flow_id', 'definition'])
    .where('deleted', '=', false)
    .where(sql<boolean>`definition @> '{"triggers":[{"type":"schedule"}]}'::jsonb`)
    .execute();
  const states = await services.db.selectFrom('trigger_states').selectAll().execute();
  const key = (ws: string, ns: string, f: string, t: string) => `${ws}\u0000${ns}\u0000${f}\u0000${t}`;
  const stateByKey = new Map(states.map((s) => [key(s.workspace_id, s.namespace, s.flow_id, s.trigger_id), s]));
  const wanted = new Set<string>();

  for (const f of flows) {
    const def = f.definition as FlowDef;
    for (const t of def.triggers ?? []) {
      if (t.type !== 'schedule' || t.disabled) continue;
      const k = key(f.workspace_id, f.namespace, f.flow_id, t.id);
      const cron = cronFor(t.cron, t.timezone ?? 'UTC');
      if (typeof cron === 'string') {
        if (warned.get(`${k}\u0000${cron}`)) continue;
        warned.set(`${k}\u0000${cron}`, true);
        log.warn({ namespace: f.namespace, flow: f.flow_id, trigger: t.id, problem: cron }, 'schedule trigger skipped: invalid cron or time zone');
        continue;
      }
      wanted.add(k);
      const ids = { workspace_id: f.workspace_id, namespace: f.namespace, flow_id: f.flow_id, trigger_id: t.id };
      const st = stateByKey.get(k);
      if (!st) {
        const res = await services.db.insertInto('trigger_states').values({ ...ids, next_fire_at: cron.nextRun(now), last_fired_at: null })
          .onConflict((oc) => oc.columns(['workspace_id', 'namespace', 'flow_id', 'trigger_id']).doNothing()).executeTakeFirst();
        if (Number(res.numInsertedOrUpdatedRows ?? 0n) > 0) result.created++;
        continue;
      }
      const where = () => services.db.updateTable('trigger_states')
        .where('workspace_id', '=', ids.workspace_id).where('namespace', '=', ids.namespace)
        .where('flow_id', '=', ids.flow_id).where('trigger_id', '=', ids.trigger_id);
      if (!consistent(cron, st.next_fire_at, st.last_fired_at, now)) {
        // The cron or time zone changed: start again from now. Conditional, like a claim.
        await where().set({ next_fire_at: cron.nextRun(now), last_fired_at: null })
          .where(sql<boolean>`next_fire_at IS NOT DISTINCT FROM ${st.next_fire_at}`)
          .where(sql<boolean>`last_fired_at IS NOT DISTINCT FROM ${st.last_fired_at}`)
          .execute();
        result.reset++;
        continue;
      }
      if (!st.next_fire_at || st.next_fire_at.getTime() > now.getTime()) continue;
      const due = latestDue(cron, st.next_fire_at, now);
      const next = cron.nextRun(due);
      const claimed = await where().set({ next_fire_at: next, last_fired_at: due })
        .where('next_fire_at', '=', st.next_fire_at).where('next_fire_at', '<=', now)
        .returning('trigger_id').executeTakeFirst();
      if (!claimed) continue; // another replica (or tick) fired this slot
      try {
        const exec = await createExecution(services, {
          workspaceId: f.workspace_id, namespace: f.namespace, flowId: f.flow_id, inputs: t.inputs ?? {},
          trigger: { type: 'schedule', id: t.id, date: due.toISOString() },
        });
        result.fired.push({ executionId: exec.id, namespace: f.namespace, flowId: f.flow_id, triggerId: t.id, date: due.toISOString() });
        log.info({ namespace: f.namespace, flow: f.flow_id, trigger: t.id, date: due.toISOString(), execution: exec.id }, 'schedule trigger fired');
      } catch (err) {
        if (err instanceof DomainError) {
          // The flow went away or its inputs no longer fit: this slot is spent.
          log.warn({ namespace: f.namespace, flow: f.flow_id, trigger: t.id, err: err.message }, 'schedule trigger could not start an execution');
          continue;
        }
        // A transient failure (database, Redis): give the slot back so the next tick tries again.
        await where().set({ next_fire_at: st.next_fire_at, last_fired_at: st.last_fired_at })
          .where(sql<boolean>`next_fire_at IS NOT DISTINCT FROM ${next}`).where('last_fired_at', '=', due).execute()
          .catch((e: Error) => log.warn({ namespace: f.namespace, flow: f.flow_id, trigger: t.id, date: due.toISOString(), err: e.message }, 'schedule trigger slot could not be given back: this slot is lost'));
        log.warn({ namespace: f.namespace, flow: f.flow_id, trigger: t.id, err: (err as Error).message }, 'schedule trigger failed; the slot is retried on the next tick');
      }
    }
  }

  // States of triggers that are gone, disabled or no longer valid.
  for (const s of states) {
    if (wanted.has(key(s.workspace_id, s.namespace, s.flow_id, s.trigger_id))) continue;
    await services.db.deleteFrom('trigger_states')
      .where('workspace_id', '=', s.workspace_id).where('namespace', '=', s.namespace)
      .where('flow_id', '=', s.flow_id).where('trigger_id', '=', s.trigger_id).execute();
  }
  return result;
}

// ---------------------------------------------------------------------------------------------
// Flow triggers
// ---------------------------------------------------------------------------------------------

function matches(t: FlowTrigger, ended: { namespace: string; flow_id: string; state: string }): boolean {
  const c = t.conditions;
  if (c.namespace !== undefined && c.namespace !== ended.namespace) return false;
  if (c.flowId !== undefined && c.flowId !== ended.flow_id) return false;
  return (c.states ?? ['SUCCESS']).includes(ended.state as never);
}

export interface FlowTriggerResult { fired: Array<{ executionId: string; namespace: string; flowId: string; triggerId: string }>; skipped: number }

/**
 * Starts the flows whose `flow` triggers match an ended execution (same workspace; namespace and
 * flowId equal when given; state among `states`). A flow never reacts to its own executions.
 * Idempotent per (ended execution, target flow, trigger): a redelivered job finds the execution
 * it already started (trigger.executionId and trigger.id) and starts none.
 */
export async function processExecutionEnded(services: Services, executionId: string): Promise<FlowTriggerResult> {
  const log = services.logging.module('svc::workflows::triggers');
  const result: FlowTriggerResult = { fired: [], skipped: 0 };
  if (!/^[0-9a-f-]{36}$/i.test(executionId)) return result;
  const ended = await services.db.selectFrom('executions').select(['id', 'workspace_id', 'namespace', 'flow_id', 'state', 'trigger', 'ended_at'])
    .where('id', '=', executionId).executeTakeFirst();
  if (!ended || !ended.ended_at || !TERMINAL_EXECUTION.includes(ended.state)) return result;
  const prev = ended.trigger as { type?: string; depth?: unknown } | null;
  const depth = (prev?.type === 'flow' && typeof prev.depth === 'number' ? prev.depth : 0) + 1;
  if (depth > MAX_FLOW_TRIGGER_DEPTH) {
    log.warn({ execution: ended.id, namespace: ended.namespace, flow: ended.flow_id, depth }, `flow triggers not evaluated: the chain of flow-triggered executions is deeper than ${MAX_FLOW_TRIGGER_DEPTH}`);
    return result;
  }
  const flows = await services.db.selectFrom('flows').select(['namespace', 'flow_id', 'definition'])
    .where('workspace_id', '=', ended.workspace_id).where('deleted', '=', false)
    .where(sql<boolean>`definition @> '{"triggers":[{"type":"flow"}]}'::jsonb`)
    .orderBy('namespace').orderBy('flow_id')
    .execute();
  const since = new Date(ended.ended_at.getTime() - 3_600_000); // clock skew between replicas
  const errors: Error[] = [];
  for (const f of flows) {
    if (f.namespace === ended.namespace && f.flow_id === ended.flow_id) continue;
    for (const t of (f.definition as FlowDef).triggers ?? []) {
      if (t.type !== 'flow' || t.disabled || !matches(t, ended)) continue;
      const already = await services.db.selectFrom('executions').select('id')
        .where('workspace_id', '=', ended.workspace_id).where('namespace', '=', f.namespace).where('flow_id', '=', f.flow_id)
        .where('created_at', '>=', since)
        .where(sql<boolean>`trigger->>'type' = 'flow' AND trigger->>'executionId' = ${ended.id} AND trigger->>'id' = ${t.id}`)
        .limit(1).executeTakeFirst();
      if (already) { result.skipped++; continue; }
      try {
        const exec = await createExecution(services, {
          workspaceId: ended.workspace_id, namespace: f.namespace, flowId: f.flow_id, inputs: t.inputs ?? {},
          trigger: { type: 'flow', id: t.id, executionId: ended.id, namespace: ended.namespace, flowId: ended.flow_id, state: ended.state, depth },
        });
        result.fired.push({ executionId: exec.id, namespace: f.namespace, flowId: f.flow_id, triggerId: t.id });
        log.info({ namespace: f.namespace, flow: f.flow_id, trigger: t.id, after: ended.id, state: ended.state, execution: exec.id }, 'flow trigger fired');
      } catch (err) {
        if (err instanceof DomainError) {
          log.warn({ namespace: f.namespace, flow: f.flow_id, trigger: t.id, err: err.message }, 'flow trigger could not start an execution');
          continue;
        }
        errors.push(err as Error);
      }
    }
  }
  // A transient failure fails the job (and BullMQ retries it when attempts allow); the targets
  // already started are not started again (see above).
  if (errors.length) throw errors[0];
  return result;
}
