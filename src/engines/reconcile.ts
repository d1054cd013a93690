// The reconcile pass (with every sweep): compares the engine objects the provisioner finds (its
// project or namespace only) with the engine rows, as Docker Compose compares containers with
// its file. An object whose engine no longer exists (a deleted workspace cascades its engines) is
// an orphan: removed on local_container, whose project label proves it is ours; only reported on
// cluster, where a namespace may hold another installation's engines. A running engine whose object is gone is provisioned again.
// An object whose `svc.config-hash` differs from the hash of the engine's configuration rendered
// now has drifted, as Compose compares a container's label with its file: the service's settings
// changed since it was provisioned (callback URL, issuer, catalog audience, a repointed driver)
// or the object was edited. Drift is reported, not acted on (replacing a running engine would
// end its queries): the next start replaces the object.
import type { Services } from '../services.js';
import { enqueueEngine } from './engines.js';
import type { EngineProvisioner, EngineSpec } from './provisioner.js';
import { engineSpec } from './transition.js';

export interface ReconcileReport { orphans: string[]; reprovisioned: string[]; drifted: string[] }

export async function reconcileEngines(s: Services, provisioner: EngineProvisioner): Promise<ReconcileReport> {
  const log = s.logging.module('svc::engines');
  const found = await provisioner.list();
  const rows = await s.db.selectFrom('engines as e').innerJoin('workspaces as w', 'w.id', 'e.workspace_id').selectAll('e').select('w.slug')
    .where('e.provisioner', '=', provisioner.kind).execute();
  const byId = new Map(rows.map((r) => [r.id, r]));
  const report: ReconcileReport = { orphans: [], reprovisioned: [], drifted: [] };
  for (const f of found) {
    const row = byId.get(f.engineId);
    if (!row) {
      const remove = provisioner.kind === 'local_container';
      log.warn({ object: f.object, engine: f.engineId }, remove ? 'orphaned engine object (its engine no longer exists): removing it' : 'engine object of no engine of this service (left in place: the namespace may be shared)');
      if (remove) await provisioner.remove({ id: f.engineId, workspace: f.workspace, name: f.name } as EngineSpec);
      report.orphans.push(f.object);
    } else if (row.state === 'running') {
      let want: string;
      try {
        want = engineSpec(s, row, row.slug).hash;
      } catch (err) {
        // e.g. its version left the pinned table: it can no longer be rendered, so it drifted
        want = `unrenderable: ${(err as Error).message}`;
      }
      if (f.hash === want) continue;
      log.warn({ object: f.object, engine: f.engineId, found: f.hash, want, running: row.running_config_hash }, 'engine object drifted from its configuration (a stop and start replaces it)');
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
