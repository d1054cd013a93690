// Governance changes (grants, groups, users, workspaces) are written in the same transaction as
// the change itself, whatever `audit.enabled` says: a change never lands without its record.
import type { Db } from '../db/index.js';

export interface GovernanceEvent {
  action: string;
  actorId: string | null;
  actor: string | null;
  target: string;
  workspace?: string | null;
  details?: Record<string, unknown>;
}

export async function recordGovernance(tx: Db, ev: GovernanceEvent): Promise<void> {
  await tx.insertInto('audit_events').values({
    kind: 'governance',
    action: ev.action,
    actor_id: ev.actorId,
    actor: ev.actor,
    target: ev.target,
    workspace: ev.workspace ?? null,
    decision: null,
    details: JSON.stringify(ev.details ?? {}),
  }).execute();
}
