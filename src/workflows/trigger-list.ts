// The triggers of a workspace's flows, for people: each schedule, flow and webhook trigger with
// when it last fired (the newest execution it started) and, for a schedule, when it fires next.
// The next fire time is computed from the cron and time zone with croner: the first slot after
// now, which is the slot the scheduler claims next (a slot already due fires on its next tick, so
// it is not shown as "next"). A disabled trigger has no next fire time. A schedule's last fire
// is the slot the scheduler last claimed (trigger_states), else its newest execution.
import { sql } from 'kysely';
import type { Services } from '../services.js';
import type { FlowDef, TriggerDef } from './flow.js';
import { cronFor } from './triggers.js';

/** Triggers listed at most in one answer. */
export const MAX_TRIGGERS_LISTED = 1000;

export interface TriggerView {
  namespace: string; flow_id: string; id: string; type: TriggerDef['type']; disabled: boolean;
  /** A schedule's cron and time zone; a flow trigger's conditions in words. */
  schedule: string | null; timezone: string | null; condition: string | null;
  last_fired_at: Date | null; last_execution_id: string | null; next_fire_at: Date | null;
  /** Why a schedule has no next fire time (an invalid cron saved before validation caught it). */
  problem: string | null;
}

function condition(t: TriggerDef): string | null {
  if (t.type !== 'flow') return null;
  const c = t.conditions;
  const which = c.namespace && c.flowId ? `${c.namespace}.${c.flowId}` : c.flowId ? `flow ${c.flowId}` : c.namespace ? `any flow of ${c.namespace}` : 'any flow';
  return `${which} ends ${(c.states ?? ['SUCCESS']).join(' or ')}`;
}

export async function listTriggers(services: Services, workspaceId: string): Promise<{ triggers: TriggerView[]; truncated: boolean }> {
  const flows = await services.db.selectFrom('flows').select(['namespace', 'flow_id', 'definition'])
    .where('workspace_id', '=', workspaceId).where('deleted', '=', false)
    .where(sql<boolean>`jsonb_array_length(COALESCE(definition->'triggers', '[]'::jsonb)) > 0`)
    .orderBy('namespace').orderBy('flow_id').execute();
  const found: Array<{ namespace: string; flow_id: string; t: TriggerDef }> = [];
  let truncated = false;
  for (const f of flows) {
    for (const t of (f.definition as FlowDef).triggers ?? []) {
      if (found.length >= MAX_TRIGGERS_LISTED) { truncated = true; break; }
      found.push({ namespace: f.namespace, flow_id: f.flow_id, t });
    }
  }
  if (found.length === 0) return { triggers: [], truncated };

  const states = await services.db.selectFrom('trigger_states').select(['namespace', 'flow_id', 'trigger_id', 'last_fired_at'])
    .where('workspace_id', '=', workspaceId).execute();
  const key = (ns: string, f: string, t: string) => `${ns}\u0000${f}\u0000${t}`;
  const stateOf = new Map(states.map((s) => [key(s.namespace, s.flow_id, s.trigger_id), s]));

  // The newest execution each trigger started: one index walk per trigger (executions_flow_idx).
  const wanted = JSON.stringify(found.map((x) => ({ ns: x.namespace, f: x.flow_id, t: x.t.id, type: x.t.type })));
  const last = await sql<{ ns: string; f: string; t: string; id: string; created_at: Date }>`
    SELECT w.ns, w.f, w.t, e.id, e.created_at
    FROM jsonb_to_recordset(${wanted}::jsonb) AS w(ns text, f text, t text, type text)
    CROSS JOIN LATERAL (
      SELECT id, created_at FROM executions
      WHERE workspace_id = ${workspaceId} AND namespace = w.ns AND flow_id = w.f
        AND trigger->>'type' = w.type AND trigger->>'id' = w.t
      ORDER BY created_at DESC LIMIT 1) e`.execute(services.db);
  const lastOf = new Map(last.rows.map((r) => [key(r.ns, r.f, r.t), r]));

  const now = services.clock.now();
  const triggers = found.map(({ namespace, flow_id, t }): TriggerView => {
    const k = key(namespace, flow_id, t.id);
    const exec = lastOf.get(k);
    const view: TriggerView = {
      namespace, flow_id, id: t.id, type: t.type, disabled: t.disabled === true,
      schedule: t.type === 'schedule' ? t.cron : null, timezone: t.type === 'schedule' ? t.timezone : null, condition: condition(t),
      last_fired_at: exec?.created_at ?? null, last_execution_id: exec?.id ?? null, next_fire_at: null, problem: null,
    };
    if (t.type !== 'schedule') return view;
    const cron = cronFor(t.cron, t.timezone ?? 'UTC');
    if (typeof cron === 'string') { view.problem = cron; return view; }
    const st = stateOf.get(k);
    if (st?.last_fired_at) view.last_fired_at = st.last_fired_at;
    if (t.disabled) return view;
    view.next_fire_at = cron.nextRun(now);
    return view;
  });
  return { triggers, truncated };
}
