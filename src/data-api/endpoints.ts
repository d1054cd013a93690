// Published endpoints of the Data API and their versions. Publishing a changed definition (engine,
// SQL, parameters or description) makes a new version; publishing the same one again changes
// nothing. Old versions stay callable by consumers that pin them (?version=N) until the endpoint
// is deleted.
import { randomUUID } from 'node:crypto';
import { queryPrepared, type Db } from '../db/index.js';
import type { Clock } from '../clock.js';
import { badRequest, isUniqueViolation, conflict, notFound } from '../errors.js';
import { checkSpecs, type ParamSpec } from './params.js';
import type { QueryColumn } from '../queries/types.js';
import { recordGovernance } from '../audit/governance.js';
import { auditActor, type Actor } from '../access/actor.js';

export const ENDPOINT_NAME_RE = /^[a-z0-9][a-z0-9_-]{0,62}$/;

export interface Definition {
  engine: string;
  sql: string;
  params: ParamSpec[];
  description: string;
}

export interface EndpointVersion extends Definition {
  /** Result columns read at publication; null when the engine could not be asked. */
  columns: QueryColumn[] | null;
  /** The endpoint's id (stable across versions). */
  id: string;
  name: string;
  version: number;
  latest_version: number;
  created_at: Date;
}

export function checkName(name: string): void {
  if (!ENDPOINT_NAME_RE.test(name)) throw badRequest('endpoint names are lower-case letters, digits, - and _ (at most 63), starting with a letter or digit');
}

// jsonb keeps an object's keys in its own order: compare declarations with sorted keys.
const canonical = (params: ParamSpec[]) => JSON.stringify(params.map((p) => Object.entries(p).filter(([, v]) => v !== undefined).sort(([a], [b]) => a.localeCompare(b))));
const sameDefinition = (a: Definition, b: Definition) =>
  a.engine === b.engine && a.sql === b.sql && a.description === b.description && canonical(a.params) === canonical(b.params);

/** Publishes `def` as endpoint `name`; answers the version now served and whether it is new. */
/** Who changes an endpoint, for its governance record (the workspace by slug). */
export interface ChangeAudit { actor: Actor; workspace: string }

export async function publish(db: Db, clock: Clock, workspaceId: string, name: string, def: Definition, by: string | null, columns: QueryColumn[] | null = null, audit?: ChangeAudit): Promise<{ endpoint: EndpointVersion; created: boolean }> {
  checkName(name);
  const params = checkSpecs(def.params, def.sql);
  const d: Definition = { ...def, params };
  try {
    return await db.transaction().execute(async (tx) => {
      const now = clock.now();
      const ep = await tx.selectFrom('data_api_endpoints').selectAll().where('workspace_id', '=', workspaceId).where('name', '=', name).forUpdate().executeTakeFirst();
      let id: string;
      let version: number;
      if (!ep) {
        id = randomUUID();
        version = 1;
        await tx.insertInto('data_api_endpoints').values({ id, workspace_id: workspaceId, name, latest_version: 1, created_at: now, updated_at: now }).execute();
      } else {
        const latest = await readVersion(tx, ep.id, ep.latest_version);
        if (latest && sameDefinition(latest, d)) return { endpoint: { ...latest, id: ep.id, name, version: ep.latest_version, latest_version: ep.latest_version }, created: false };
        id = ep.id;
        version = ep.latest_version + 1;
        await tx.updateTable('data_api_endpoints').set({ latest_version: version, updated_at: now }).where('id', '=', id).execute();
      }
      await tx.insertInto('data_api_versions').values({
        endpoint_id: id, version, engine: d.engine, sql: d.sql, params: JSON.stringify(d.params), description: d.description, created_by: by, created_at: now,
        columns: columns ? JSON.stringify(columns) : null,
      }).execute();
      if (audit) await recordGovernance(tx, { action: 'data_api.endpoint.publish', ...auditActor(audit.actor), target: `endpoint:${name}`, workspace: audit.workspace, details: { version, engine: d.engine } });
      return { endpoint: { ...d, id, name, version, latest_version: version, created_at: now, columns }, created: true };
    });
  } catch (err) {
    if (isUniqueViolation(err)) throw conflict(`endpoint ${name} is being published by another request; try again`);
    throw err;
  }
}

async function readVersion(db: Db, endpointId: string, version: number) {
  const v = await db.selectFrom('data_api_versions').select(['engine', 'sql', 'params', 'description', 'created_at', 'columns'])
    .where('endpoint_id', '=', endpointId).where('version', '=', version).executeTakeFirst();
  return v ? { engine: v.engine, sql: v.sql, params: v.params, description: v.description, created_at: v.created_at, columns: v.columns } : undefined;
}

// Every call reads its version: a named prepared statement, parsed and planned once per connection.
const FIND_VERSION = `SELECT e.id, e.name, e.latest_version, v.version, v.engine, v.sql, v.params, v.description, v.created_at, v.columns
  FROM data_api_endpoints e JOIN data_api_versions v ON v.endpoint_id = e.id AND v.version = COALESCE($3::integer, e.latest_version)
  WHERE e.workspace_id = $1 AND e.name = $2`;

/** One version of an endpoint (the latest when `version` is undefined); 404 naming what is missing. */
export async function findVersion(db: Db, workspaceId: string, name: string, version?: number): Promise<EndpointVersion> {
  const [row] = await queryPrepared<EndpointVersion>(db, 'svc_data_api_version', FIND_VERSION, [workspaceId, name, version ?? null]);
  if (row) return row;
  if (version !== undefined && await db.selectFrom('data_api_endpoints').select('id').where('workspace_id', '=', workspaceId).where('name', '=', name).executeTakeFirst()) {
    throw notFound(`endpoint ${name} has no version ${version}`);
  }
  throw notFound(`endpoint does not exist: ${name}`);
}

/** The latest version of every endpoint of a workspace, by name. */
export async function listLatest(db: Db, workspaceId: string): Promise<EndpointVersion[]> {
  return db.selectFrom('data_api_endpoints as e')
    .innerJoin('data_api_versions as v', (j) => j.onRef('v.endpoint_id', '=', 'e.id').onRef('v.version', '=', 'e.latest_version'))
    .select(['e.id', 'e.name', 'e.latest_version', 'v.version', 'v.engine', 'v.sql', 'v.params', 'v.description', 'v.created_at', 'v.columns'])
    .where('e.workspace_id', '=', workspaceId).orderBy('e.name').limit(1000).execute();
}

/** Every version of an endpoint, newest first. */
export async function listVersions(db: Db, workspaceId: string, name: string): Promise<EndpointVersion[]> {
  const rows = await db.selectFrom('data_api_endpoints as e')
    .innerJoin('data_api_versions as v', (j) => j.onRef('v.endpoint_id', '=', 'e.id'))
    .select(['e.id', 'e.name', 'e.latest_version', 'v.version', 'v.engine', 'v.sql', 'v.params', 'v.description', 'v.created_at', 'v.columns'])
    .where('e.workspace_id', '=', workspaceId).where('e.name', '=', name).orderBy('v.version', 'desc').limit(1000).execute();
  if (rows.length === 0) throw notFound(`endpoint does not exist: ${name}`);
  return rows;
}

export async function deleteEndpoint(db: Db, workspaceId: string, name: string, audit?: ChangeAudit): Promise<void> {
  await db.transaction().execute(async (tx) => {
    const r = await tx.deleteFrom('data_api_endpoints').where('workspace_id', '=', workspaceId).where('name', '=', name).executeTakeFirst();
    if (Number(r.numDeletedRows) === 0) throw notFound(`endpoint does not exist: ${name}`);
    if (audit) await recordGovernance(tx, { action: 'data_api.endpoint.delete', ...auditActor(audit.actor), target: `endpoint:${name}`, workspace: audit.workspace });
  });
}
