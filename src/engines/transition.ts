// One engine transition on a worker: claim the engine (the lease), act through the provisioner,
// record the outcome once (guarded by the lease token and the generation). A worker that dies
// mid-transition leaves the lease to expire; the sweep (the reaper) then queues the engine again
// and the next claim acts again: every provisioner operation is idempotent.
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { Services } from '../services.js';
import type { EngineRow } from '../db/engine-types.js';
import { CLI_ACTOR } from '../access/actor.js';
import { deleteClient } from '../idp/clients.js';
import { idpIssuer } from '../config/index.js';
import { callbackUrl, enqueueEngine } from './engines.js';
import { resolveImage } from './images.js';
import { CONFIG_DIR, SECRET_ENV, engineLabels, render } from './render.js';
import { workerAction, TRANSITIONAL } from './states.js';
import type { EngineProvisioner, EngineSpec } from './provisioner.js';
import { effectiveDrivers, verifyRepointedDrivers } from './jdbc-drivers.js';

export interface EngineJob { engineId: string }

/** Lease length and sweep period follow the task-run rules (workflow.working_timeout_s, reaper_interval_secs). */
export const leaseMs = (s: Services) => Math.max(1, s.config.workflow.working_timeout_s) * 1000;

async function claim(s: Services, engineId: string): Promise<(EngineRow & { slug: string }) | undefined> {
  const token = randomUUID();
  const now = s.clock.now();
  const { rows } = await sql<EngineRow & { slug: string }>`
    UPDATE engines e SET lease_token = ${token}, lease_until = ${new Date(now.getTime() + leaseMs(s))}::timestamptz
    FROM workspaces w
    WHERE e.id = ${engineId} AND w.id = e.workspace_id AND e.state IN ('provisioning', 'stopping')
      AND (e.lease_until IS NULL OR e.lease_until < ${now}::timestamptz)
    RETURNING e.*, w.slug`.execute(s.db);
  return rows[0];
}

/** The spec of an engine as configured now (image, files, labels, secret environment). */
export function engineSpec(s: Services, row: EngineRow, slug: string): EngineSpec {
  const provisioner = row.provisioner;
  const image = resolveImage(row.kind, row.image.includes('@') ? { image: row.image, version: row.version ?? undefined } : { image: row.image });
  const r = render({
    kind: row.kind, workspace: slug, engine: row.name, engineId: row.id, image, resources: row.resources,
    callbackUrl: callbackUrl(s, provisioner) ?? '', clientId: row.oauth_client_id ?? '', catalogAudience: s.config.oidc.catalog_audience,
    jdbcDrivers: row.kind === 'olap' ? Object.fromEntries(effectiveDrivers(s.config).map((d) => [d.dialect, d])) : undefined,
  });
  const project = provisioner === 'local_container' ? s.config.engines.local_container.project : undefined;
  const env: Record<string, string> = {};
  if (row.client_secret_sealed && row.oauth_client_id) {
    env[SECRET_ENV] = s.sealer.unseal(row.client_secret_sealed, `engine-client:${row.oauth_client_id}`).toString('utf8');
  }
  return {
    id: row.id, workspace: slug, name: row.name, kind: row.kind, image: image.image, port: image.port, resources: row.resources,
    files: r.files, configDir: CONFIG_DIR[row.kind], hash: r.hash,
    labels: engineLabels({ project, workspace: slug, engine: row.name, engineId: row.id, hash: r.hash, kind: row.kind }),
    env,
  };
}

const oneLine = (err: unknown) => String((err as Error)?.message ?? err).replace(/\s+/g, ' ').trim().slice(0, 1000);

export async function runEngineJob(s: Services, provisioner: EngineProvisioner, job: EngineJob): Promise<string> {
  const log = s.logging.module('svc::engines');
  const row = await claim(s, job.engineId);
  if (!row) return 'nothing to do';
  const action = workerAction(row.state, row.desired);
  const token = row.lease_token!;
  // renew the lease while acting (image pulls can take long)
  const renew = setInterval(() => {
    s.db.updateTable('engines').set({ lease_until: new Date(s.clock.now().getTime() + leaseMs(s)) })
      .where('id', '=', row.id).where('lease_token', '=', token).execute()
      .catch((err: Error) => log.warn({ engine: row.id, err: err.message }, 'engine lease renewal failed'));
  }, Math.max(500, leaseMs(s) / 3));
  let outcome: { state: EngineRow['state']; endpoint_url?: string | null; error?: string | null; running?: { hash: string; files: Record<string, string> } | null } | 'removed';
  try {
    const spec = engineSpec(s, row, row.slug);
    if (action === 'up') {
      // repointed JDBC drivers are checked before the engine can load one
      if (row.kind === 'olap') await verifyRepointedDrivers(effectiveDrivers(s.config));
      const { endpoint } = await provisioner.up(spec);
      outcome = { state: 'running', endpoint_url: endpoint, error: null, running: { hash: spec.hash, files: spec.files } };
    } else if (action === 'stop') {
      await provisioner.stop(spec);
      outcome = { state: 'stopped', endpoint_url: null };
    } else if (action === 'remove') {
      await provisioner.remove(spec);
      outcome = 'removed';
    } else {
      outcome = { state: row.state };
    }
  } catch (err) {
    log.warn({ engine: row.id, workspace: row.slug, name: row.name, action, err: oneLine(err) }, 'engine transition failed');
    outcome = { state: 'failed', endpoint_url: null, error: `${action} failed: ${oneLine(err)}` };
  } finally {
    clearInterval(renew);
  }
  const now = s.clock.now();
  if (outcome === 'removed') {
    const gone = await s.db.deleteFrom('engines').where('id', '=', row.id).where('lease_token', '=', token).where('generation', '=', row.generation)
      .returning('oauth_client_id').executeTakeFirst();
    if (gone?.oauth_client_id) {
      await deleteClient({ db: s.db, invalidator: s.invalidator, clock: s.clock }, CLI_ACTOR, gone.oauth_client_id)
        .catch((err: Error) => log.warn({ engine: row.id, client: gone.oauth_client_id, err: err.message }, 'removed engine\'s OAuth client could not be deleted'));
    }
    if (gone) { log.info({ engine: row.id, workspace: row.slug, name: row.name }, 'engine removed'); return 'removed'; }
  } else {
    const done = await s.db.updateTable('engines').set({
      state: outcome.state, lease_token: null, lease_until: null, updated_at: now, state_changed_at: now,
      ...(outcome.endpoint_url !== undefined ? { endpoint_url: outcome.endpoint_url } : {}),
      ...(outcome.error !== undefined ? { error: outcome.error } : {}),
      ...(outcome.running ? { running_config_hash: outcome.running.hash, running_config: JSON.stringify(outcome.running.files), config_hash: outcome.running.hash, idp_issuer: idpIssuer(s.config) } : {}),
    }).where('id', '=', row.id).where('lease_token', '=', token).where('generation', '=', row.generation).returning('state').executeTakeFirst();
    if (done) { log.info({ engine: row.id, workspace: row.slug, name: row.name, state: done.state }, 'engine transition recorded'); return done.state; }
  }
  // What is wanted changed while acting: release the lease and queue the engine again.
  const after = await s.db.updateTable('engines').set({ lease_token: null, lease_until: null }).where('id', '=', row.id).where('lease_token', '=', token)
    .returning(['state', 'generation']).executeTakeFirst();
  if (after && TRANSITIONAL.includes(after.state)) await enqueueEngine(s, row.id, after.generation, token.slice(0, 8));
  return 'superseded';
}

/** The reaper's sweep: engines in a transition whose lease is free or expired and that waited a while. */
export async function sweepEngines(s: Services): Promise<number> {
  const now = s.clock.now();
  const cutoff = new Date(now.getTime() - Math.max(1, s.config.workflow.reaper_interval_secs) * 1000);
  const rows = await s.db.selectFrom('engines').select(['id', 'generation'])
    .where('state', 'in', ['provisioning', 'stopping']).where('state_changed_at', '<', cutoff)
    .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', now)])).limit(100).execute();
  for (const r of rows) await enqueueEngine(s, r.id, r.generation, `sweep-${Math.floor(now.getTime() / leaseMs(s))}`);
  return rows.length;
}
