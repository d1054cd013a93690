// The rest of what Apache Ranger's RangerAdminRESTClient downloads besides policies and tags:
// roles (the workspace roles, so a policy item naming role ws_editor means exactly the people the
// catalog treats as editors: one access model), and the user store and GDS downloads, which this
// service does not use but must answer (an empty result, or 304 at the version the plugin holds:
// a failing download stops the plugin). Each poll records what the plugin holds (`pluginId`), so
// administrators see which engines lag.
import { sql } from 'kysely';
import type { Db } from '../db/index.js';
import { findWorkspace } from '../workspaces/workspaces.js';
import { findPolicyService } from './service-name.js';
import type { Download } from './policies.js';

/** Plugins kept per workspace: pluginIds are the plugin's choice, so the table is bounded. */
export const MAX_PLUGINS = 1000;
const ROLE_ACTIONS = ['workspace.%', 'group.member.%', 'user.%'];

/** Roles change with grants and memberships; the version is the id of the latest such audit event (only goes up). */
async function roleVersion(db: Db): Promise<number> {
  const r = await db.selectFrom('audit_events').select(sql<string>`coalesce(max(id), 0)`.as('v'))
    .where('kind', '=', 'governance').where((eb) => eb.or(ROLE_ACTIONS.map((a) => eb('action', 'like', a)))).executeTakeFirst();
  return Number(r?.v ?? 0);
}

/** GET /service/roles/download/{service}: RangerRoles, one role per workspace role with its users and groups. */
export async function downloadRoles(db: Db, service: string, lastKnown: number | undefined): Promise<Download<Record<string, unknown>>> {
  const ps = await findPolicyService(db, service);
  const ws = ps ? { id: ps.workspaceId } : undefined;
  if (!ws) return { kind: 'unknown' };
  const version = await roleVersion(db);
  if (lastKnown !== undefined && lastKnown === version) return { kind: 'not_modified', version };
  const grants = await db.selectFrom('workspace_role_grants as g').leftJoin('users as u', 'u.id', 'g.user_id').leftJoin('groups as gr', 'gr.id', 'g.group_id')
    .select(['g.role', 'u.email', 'gr.name as group']).where('g.workspace_id', '=', ws.id).execute();
  const roles = (['ws_viewer', 'ws_editor', 'ws_admin'] as const).map((role, i) => ({
    id: i + 1, name: role, description: `workspace ${service}: ${role}`, isEnabled: true, options: {},
    users: [...new Set(grants.filter((g) => g.role === role && g.email).map((g) => g.email!))].sort().map((name) => ({ name, isAdmin: false })),
    groups: [...new Set(grants.filter((g) => g.role === role && g.group).map((g) => g.group!))].sort().map((name) => ({ name, isAdmin: false })),
    roles: [],
  }));
  return { kind: 'ok', version, body: { serviceName: service, roleVersion: version, roleUpdateTime: null, rangerRoles: roles } };
}

// The user store and GDS are empty here, at a fixed version: first poll gets the empty body, later polls 304.
const EMPTY_VERSION = 1;

export function downloadUserStore(service: string, lastKnown: number | undefined): Download<Record<string, unknown>> {
  if (lastKnown === EMPTY_VERSION) return { kind: 'not_modified', version: EMPTY_VERSION };
  return { kind: 'ok', version: EMPTY_VERSION, body: { serviceName: service, userStoreVersion: EMPTY_VERSION, userStoreUpdateTime: null, userAttrMapping: {}, groupAttrMapping: {}, userGroupMapping: {}, userCloudIdMapping: {}, groupCloudIdMapping: {} } };
}

export function downloadGds(service: string, lastKnown: number | undefined): Download<Record<string, unknown>> {
  if (lastKnown === EMPTY_VERSION) return { kind: 'not_modified', version: EMPTY_VERSION };
  return { kind: 'ok', version: EMPTY_VERSION, body: { serviceName: service, gdsVersion: EMPTY_VERSION, gdsLastUpdateTime: null, dataShares: [], sharedResources: [], dshids: [], projects: [], datasets: [], dips: [], dshs: [], isDelta: false } };
}

export type PollKind = 'policy' | 'tag' | 'role';
export interface Poll { service: string; pluginId: string; clusterName?: string; kind: PollKind; held: number | undefined; lastActivationTime?: number }

/** Records a plugin's poll: the version it says it holds and when it asked. */
export async function recordPoll(db: Db, p: Poll, now: Date): Promise<void> {
  const ps = await findPolicyService(db, p.service);
  const ws = ps ? { id: ps.workspaceId } : undefined;
  if (!ws) return;
  const held = p.held !== undefined && p.held >= 0 ? p.held : null;
  const activation = p.lastActivationTime !== undefined && p.lastActivationTime > 0 ? new Date(p.lastActivationTime) : null;
  await sql`
    INSERT INTO policy_plugins (workspace_id, plugin_id, cluster_name, ${sql.ref(`${p.kind}_version_held`)}, ${sql.ref(`${p.kind}_polled_at`)}, last_activation_time, last_poll_at)
    SELECT ${ws.id}, ${p.pluginId}, ${p.clusterName ?? ''}, ${held}, ${now}, ${activation}, ${now}
    WHERE (SELECT count(*) FROM policy_plugins WHERE workspace_id = ${ws.id}) < ${MAX_PLUGINS}
       OR EXISTS (SELECT 1 FROM policy_plugins WHERE workspace_id = ${ws.id} AND plugin_id = ${p.pluginId})
    ON CONFLICT (workspace_id, plugin_id) DO UPDATE SET
      -- Ranger's tag download sends no clusterName: it must not wipe the one the others sent.
      cluster_name = CASE WHEN ${p.clusterName === undefined} THEN policy_plugins.cluster_name ELSE EXCLUDED.cluster_name END,
      ${sql.ref(`${p.kind}_version_held`)} = EXCLUDED.${sql.ref(`${p.kind}_version_held`)},
      ${sql.ref(`${p.kind}_polled_at`)} = EXCLUDED.${sql.ref(`${p.kind}_polled_at`)},
      last_activation_time = coalesce(EXCLUDED.last_activation_time, policy_plugins.last_activation_time),
      last_poll_at = EXCLUDED.last_poll_at`.execute(db);
}

export interface PluginView {
  plugin_id: string; cluster_name: string; last_poll_at: string;
  /** The plugin's `lastActivationTime`: when it last activated a download (null: never said). */
  last_activation_time: string | null;
  policy_version_held: number | null; tag_version_held: number | null; role_version_held: number | null;
  /** Versions behind the current policy and tag versions (null: never polled that kind). */
  policies_behind: number | null; tags_behind: number | null; lagging: boolean;
}

export async function listPlugins(db: Db, slug: string, current: { policy_version: number; tag_version: number }): Promise<PluginView[]> {
  const ws = await findWorkspace(db, slug);
  if (!ws) return [];
  const rows = await db.selectFrom('policy_plugins').selectAll().where('workspace_id', '=', ws.id).orderBy('plugin_id').execute();
  return rows.map((r) => {
    const pv = r.policy_version_held === null ? null : Number(r.policy_version_held);
    const tv = r.tag_version_held === null ? null : Number(r.tag_version_held);
    const policiesBehind = pv === null ? null : Math.max(0, current.policy_version - pv);
    const tagsBehind = tv === null ? null : Math.max(0, current.tag_version - tv);
    return {
      plugin_id: r.plugin_id, cluster_name: r.cluster_name, last_poll_at: r.last_poll_at.toISOString(),
      last_activation_time: r.last_activation_time ? r.last_activation_time.toISOString() : null,
      policy_version_held: pv, tag_version_held: tv, role_version_held: r.role_version_held === null ? null : Number(r.role_version_held),
      policies_behind: policiesBehind, tags_behind: tagsBehind, lagging: (policiesBehind ?? 0) > 0 || (tagsBehind ?? 0) > 0,
    };
  });
}
