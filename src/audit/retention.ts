// Retention of append-only records, pruned hourly by job schedulers (src/jobs/maintenance.ts):
//   audit rows            older than audit.retention_days (0 or negative keeps them)
//   Data API access log   older than data_api.access_log_retention_days (0 keeps them)
//   task log lines        older than workflow.log_retention_days (0 keeps them)
// Rows go in batches of PRUNE_BATCH per DELETE, so a large backlog never holds one long transaction.
import { sql } from 'kysely';
import type { Db } from '../db/index.js';
import type { Clock } from '../clock.js';

export const PRUNE_BATCH = 10_000;
const DAY_MS = 86_400_000;

export type PrunableTable = 'audit_events' | 'data_api_access_log' | 'task_logs';

/** The instant before which rows are pruned, or null when `days` keeps them for ever. */
export function retentionCutoff(clock: Clock, days: number): Date | null {
  if (!(days > 0)) return null;
  return new Date(clock.now().getTime() - days * DAY_MS);
}

/** Deletes rows whose `at` is before `cutoff`, PRUNE_BATCH at a time; returns how many. */
export async function pruneOlderThan(db: Db, table: PrunableTable, cutoff: Date, batch = PRUNE_BATCH): Promise<number> {
  let total = 0;
  for (;;) {
    const res = await sql`DELETE FROM ${sql.table(table)} WHERE id IN (SELECT id FROM ${sql.table(table)} WHERE at < ${cutoff} ORDER BY at LIMIT ${batch})`.execute(db);
    const n = Number(res.numAffectedRows ?? 0n);
    total += n;
    if (n < batch) return total;
  }
}

export async function pruneAuditEvents(db: Db, clock: Clock, retentionDays: number): Promise<number> {
  const cutoff = retentionCutoff(clock, retentionDays);
  return cutoff ? pruneOlderThan(db, 'audit_events', cutoff) : 0;
}

export async function pruneAccessLog(db: Db, clock: Clock, retentionDays: number): Promise<number> {
  const cutoff = retentionCutoff(clock, retentionDays);
  return cutoff ? pruneOlderThan(db, 'data_api_access_log', cutoff) : 0;
}

export async function pruneTaskLogs(db: Db, clock: Clock, retentionDays: number): Promise<number> {
  const cutoff = retentionCutoff(clock, retentionDays);
  return cutoff ? pruneOlderThan(db, 'task_logs', cutoff) : 0;
}

/**
 * Audit events newest first. `actor` names the person: rows written without it (authorization
 * decisions before issue 28) take the email of their `actor_id`. `hideReads` leaves out the
 * allowed GETs, which outnumber every other event.
 */
export async function listAuditEvents(db: Db, opts: { before?: string; limit: number; kind?: 'authz' | 'governance' | 'auth'; hideReads?: boolean }) {
  let q = db.selectFrom('audit_events').leftJoin('users', 'users.id', 'audit_events.actor_id')
    .selectAll('audit_events').select(sql<string | null>`COALESCE(audit_events.actor, users.email)`.as('actor'))
    .orderBy('audit_events.id', 'desc').limit(opts.limit);
  if (opts.before) q = q.where('audit_events.id', '<', opts.before);
  if (opts.kind) q = q.where('audit_events.kind', '=', opts.kind);
  if (opts.hideReads) q = q.where(sql<boolean>`NOT (audit_events.kind = 'authz' AND audit_events.decision = 'allow' AND audit_events.action LIKE 'GET %')`);
  const rows = await q.execute();
  return rows.map((r) => ({ ...r, id: String(r.id) }));
}
