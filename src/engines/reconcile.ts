// The reconcile pass (with every sweep): compares the engine objects the provisioner finds (its
// project or namespace only) with the engine rows, as Docker Compose compares containers with
// its file. An object whose engine no longer exists (a deleted workspace cascades its engines) is
// an orphan: removed on local_container, whose project label proves it is ours; only reported on
// cluster, where a namespace may hold another installation's engines. A running engine whose object is gone is provisioned again; an object
// whose configuration hash differs from what the engine last ran is drift and is reported.
import type { Services } from '../services.js';
import { enqueueEngine } from './engines.js';
import type { EngineProvisioner, EngineSpec } from './provisioner.js';

export interface ReconcileReport { orphans: string[]; reprovisioned: string[]; drifted: string[] }

export async function reconcileEngines(s: Services, provisioner: EngineProvisioner): Promise<ReconcileReport> {
  const log = s.logging.module('svc::engines');
  const found = await provisioner.list();
  const rows = await s.db.selectFrom('engines').select(['id', 'name', 'state', 'generation', 'running_config_hash', 'lease_until'])
    .where('provisioner', '=', provisioner.kind).execute();
  const byId = new Map(rows.map((r) => [r.id, r]));
  const report: ReconcileReport = { orphans: [], reprovisioned: [], drifted: [] };
  for (const f of found) {
    const row = byId.get(f.engineId);
    if (!row) {
      const remove = provisioner.kind === 'local_container';
      log.warn({ object: f.object, engine: f.engineId }, remove ? 'orphaned engine object (its engine no longer exists): removing it' : 'engine object of no engine of this service (left in place: the namespace may be shared)');
      if (remove) await provisioner.remove({ id: f.engineId, workspace: f.workspace, name: f.name } as EngineSpec);
      report.orphans.push(f.object);
    } else if (row.state === 'running' && row.running_config_hash && f.hash !== row.running_config_hash) {
      log.warn({ object: f.object, engine: f.engineId, running: row.running_config_hash, found: f.hash }, 'engine object drifted from its configuration');
      report.drifted.push(f.object);
    }
  }
  const present = new Set(found.map((f) => f.engineId));
  const now = s.clock.now();
  for (const r of rows) {
    if (r.state !== 'running' || present.has(r.id)) continue;
    // provision it again, guarded like an API request (the row must still be running, same generation)
    const next = await s.db.updateTable('engines').set({ state: 'provisioning', generation: r.generation + 1, state_changed_at: now, updated_at: now })
      .where('id', '=', r.id).where('state', '=', 'running').where('generation', '=', r.generation).returning('generation').executeTakeFirst();
    if (!next) continue;
    log.warn({ engine: r.id, name: r.name }, 'engine object missing: provisioning it again');
    await enqueueEngine(s, r.id, next.generation);
    report.reprovisioned.push(r.name);
  }
  return report;
}
