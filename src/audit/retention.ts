// Audit rows older than `audit.retention_days` are pruned hourly; 0 or negative keeps them.
import type { Db } from '../db/index.js';
import type { Clock } from '../clock.js';

export async function pruneAuditEvents(db: Db, clock: Clock, retentionDays: number): Promise<number> {
  if (retentionDays <= 0) return 0;
  const cutoff = new Date(clock.now().getTime() - retentionDays * 86_400_000);
  const res = await db.deleteFrom('audit_events').where('at', '<', cutoff).executeTakeFirst();
  return Number(res.numDeletedRows);
}

export async function listAuditEvents(db: Db, opts: { before?: string; limit: number; kind?: 'authz' | 'governance' | 'auth' }) {
  let q = db.selectFrom('audit_events').selectAll().orderBy('id', 'desc').limit(opts.limit);
  if (opts.before) q = q.where('id', '<', opts.before);
  if (opts.kind) q = q.where('kind', '=', opts.kind);
  const rows = await q.execute();
  return rows.map((r) => ({ ...r, id: String(r.id) }));
}

