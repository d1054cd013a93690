// The policy service: one Ranger-style service per workspace (named by the workspace slug) whose
// access policies and resource tags engine plugins download. Workspace administrators change
// them through /api; each change bumps the service's version (policy_version for policies,
// tag_version for tags, as Ranger keeps them) and is a governance event in the same transaction.
import { sql } from 'kysely';
import type { Db } from '../db/index.js';
import { badRequest, conflict, isUniqueViolation, notFound } from '../errors.js';
import { recordGovernance } from '../audit/governance.js';
import { findWorkspace } from '../workspaces/workspaces.js';
import { findPolicyService } from './service-name.js';
import { ACCESS_TYPES, MASK_TYPES, RESOURCES, SERVICE_TYPE, serviceDef } from './service-def.js';
import type { Actor } from '../access/actor.js';


export type Resources = Partial<Record<string, string[]>>;
/** Whom an item names: at least one user, group or role. */
export interface Principals { users?: string[]; groups?: string[]; roles?: string[] }
export interface PolicyItem extends Principals { accesses: string[]; delegate_admin?: boolean }
/** Who sees a column masked, and how (a Ranger mask type; `expression` for CUSTOM, `{col}` is the column). */
export interface MaskItem extends Principals { type: string; expression?: string }
/** Who sees only the rows `filter` (a SQL boolean expression) keeps. */
export interface RowFilterItem extends Principals { filter: string }
export interface PolicyInput {
  name: string;
  description?: string;
  is_enabled?: boolean;
  resources: Resources;
  allow?: PolicyItem[];
  deny?: PolicyItem[];
  masks?: MaskItem[];
  row_filters?: RowFilterItem[];
}
export interface TagInput { type: string; attributes?: Record<string, string>; resources: Resources }

export interface PolicyView {
  id: string; guid: string; name: string; description: string; is_enabled: boolean;
  resources: Record<string, string[]>; allow: PolicyItem[]; deny: PolicyItem[]; masks: MaskItem[]; row_filters: RowFilterItem[]; version: number;
  created_at: Date; updated_at: Date;
}
export interface TagView { id: string; guid: string; type: string; attributes: Record<string, string>; resources: Record<string, string[]>; created_at: Date }

// ---------- validation ----------

function checkResources(r: Resources): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const [k, v] of Object.entries(r)) {
    if (v === undefined) continue;
    if (!(RESOURCES as readonly string[]).includes(k)) throw badRequest(`unknown resource "${k}": use ${RESOURCES.join(', ')}`);
    if (!Array.isArray(v) || v.length === 0 || v.some((x) => typeof x !== 'string' || x === '')) throw badRequest(`resource ${k} needs at least one non-empty value`);
    out[k] = [...new Set(v)];
  }
  // A resource needs its parents: column needs table, table needs schema, schema needs catalog.
  let depth = 0;
  while (depth < RESOURCES.length && out[RESOURCES[depth]]) depth += 1;
  if (depth === 0) throw badRequest('resources need at least a catalog');
  for (let i = depth; i < RESOURCES.length; i++) {
    if (out[RESOURCES[i]]) throw badRequest(`resource ${RESOURCES[i]} needs ${RESOURCES[i - 1]}`);
  }
  return out;
}

function checkItems(items: PolicyItem[] | undefined, what: string): PolicyItem[] {
  return (items ?? []).map((it, i) => {
    const accesses = [...new Set(it.accesses)];
    if (accesses.length === 0) throw badRequest(`${what}[${i}] needs at least one access`);
    for (const a of accesses) if (!(ACCESS_TYPES as readonly string[]).includes(a)) throw badRequest(`${what}[${i}]: unknown access "${a}": use ${ACCESS_TYPES.join(', ')}`);
    return { ...principals(it, `${what}[${i}]`), accesses, delegate_admin: it.delegate_admin ?? false };
  });
}

/** The named principals of an item: at least one user, group or role. */
function principals(it: Principals, where: string) {
  const users = it.users ?? [];
  const groups = it.groups ?? [];
  const roles = it.roles ?? [];
  if (users.length + groups.length + roles.length === 0) throw badRequest(`${where} needs users, groups or roles`);
  return { users, groups, roles };
}

function checkMasks(items: MaskItem[] | undefined): MaskItem[] {
  return (items ?? []).map((it, i) => {
    const who = principals(it, `masks[${i}]`);
    if (!MASK_TYPES.some((m) => m.name === it.type)) throw badRequest(`masks[${i}]: unknown mask type "${it.type}": use ${MASK_TYPES.map((m) => m.name).join(', ')}`);
    const expression = it.expression?.trim() ?? '';
    if (it.type === 'CUSTOM' && expression === '') throw badRequest(`masks[${i}]: a CUSTOM mask needs an expression`);
    if (it.type !== 'CUSTOM' && expression !== '') throw badRequest(`masks[${i}]: only a CUSTOM mask takes an expression`);
    return { ...who, type: it.type, ...(expression ? { expression } : {}) };
  });
}

function checkRowFilters(items: RowFilterItem[] | undefined): RowFilterItem[] {
  return (items ?? []).map((it, i) => {
    const who = principals(it, `row_filters[${i}]`);
    const filter = it.filter.trim();
    if (filter === '') throw badRequest(`row_filters[${i}] needs a filter expression`);
    return { ...who, filter };
  });
}

// ---------- service rows ----------

async function workspaceOf(db: Db, slug: string) {
  const ws = await findWorkspace(db, slug);
  if (!ws) throw notFound(`workspace does not exist: ${slug}`);
  return ws;
}

async function bump(tx: Db, workspaceId: string, which: 'policy' | 'tag', now: Date): Promise<string> {
  const version = which === 'policy' ? 'policy_version' : 'tag_version';
  const time = which === 'policy' ? 'policy_update_time' : 'tag_update_time';
  const row = await sql<{ v: string }>`
    INSERT INTO policy_services (workspace_id, ${sql.ref(version)}, ${sql.ref(time)}) VALUES (${workspaceId}, 1, ${now})
    ON CONFLICT (workspace_id) DO UPDATE SET ${sql.ref(version)} = policy_services.${sql.ref(version)} + 1, ${sql.ref(time)} = EXCLUDED.${sql.ref(time)}
    RETURNING ${sql.ref(version)} AS v`.execute(tx);
  return row.rows[0].v;
}

// ---------- policies (admin) ----------

const policyView = (r: {
  id: string; guid: string; name: string; description: string; is_enabled: boolean; resources: unknown;
  allow_items: unknown; deny_items: unknown; mask_items: unknown; row_filter_items: unknown; version: number; created_at: Date; updated_at: Date;
}): PolicyView => ({
  id: r.id, guid: r.guid, name: r.name, description: r.description, is_enabled: r.is_enabled,
  resources: r.resources as Record<string, string[]>, allow: r.allow_items as PolicyItem[], deny: r.deny_items as PolicyItem[],
  masks: r.mask_items as MaskItem[], row_filters: r.row_filter_items as RowFilterItem[],
  version: r.version, created_at: r.created_at, updated_at: r.updated_at,
});

export async function serviceVersions(db: Db, slug: string): Promise<{ name: string; policy_version: number; tag_version: number }> {
  const ws = await workspaceOf(db, slug);
  const row = await db.selectFrom('policy_services').select(['policy_version', 'tag_version']).where('workspace_id', '=', ws.id).executeTakeFirst();
  return { name: ws.slug, policy_version: Number(row?.policy_version ?? 0), tag_version: Number(row?.tag_version ?? 0) };
}

export async function listPolicies(db: Db, slug: string): Promise<PolicyView[]> {
  const ws = await workspaceOf(db, slug);
  const rows = await db.selectFrom('policies').selectAll().where('workspace_id', '=', ws.id).orderBy('id').execute();
  return rows.map(policyView);
}

/**
 * The validated resources and items of a policy. A policy is of one kind, as in Ranger: access
 * (allow and deny items), column mask (masks; resources down to one column) or row filter
 * (row_filters; resources down to the table, no column).
 */
function checkPolicyInput(input: PolicyInput) {
  const resources = checkResources(input.resources);
  const allow = checkItems(input.allow, 'allow');
  const deny = checkItems(input.deny, 'deny');
  const masks = checkMasks(input.masks);
  const rowFilters = checkRowFilters(input.row_filters);
  const kinds = [allow.length + deny.length > 0, masks.length > 0, rowFilters.length > 0].filter(Boolean).length;
  if (kinds === 0) throw badRequest('a policy needs at least one allow, deny, mask or row filter item');
  if (kinds > 1) throw badRequest('a policy holds one kind of item: allow and deny, masks, or row_filters');
  if (masks.length > 0 && resources.column === undefined) throw badRequest('a mask policy names its columns: resources down to column');
  if (rowFilters.length > 0 && (resources.table === undefined || resources.column !== undefined)) throw badRequest('a row filter policy names tables: resources down to table, no column');
  return { resources, items: { allow_items: JSON.stringify(allow), deny_items: JSON.stringify(deny), mask_items: JSON.stringify(masks), row_filter_items: JSON.stringify(rowFilters) } };
}

function parsePolicyId(id: string): string {
  if (!/^\d{1,18}$/.test(id)) throw notFound(`policy does not exist: ${id}`);
  return id;
}

export async function createPolicy(db: Db, actor: Actor, slug: string, input: PolicyInput, now: Date): Promise<PolicyView & { policy_version: number }> {
  const { resources, items } = checkPolicyInput(input);
  return db.transaction().execute(async (tx) => {
    const ws = await workspaceOf(tx, slug);
    try {
      const r = await tx.insertInto('policies').values({
        workspace_id: ws.id, name: input.name.trim(), description: input.description ?? '', is_enabled: input.is_enabled ?? true,
        resources: JSON.stringify(resources), ...items,
        created_by: actor.id, created_at: now, updated_at: now,
      }).returningAll().executeTakeFirstOrThrow();
      const v = await bump(tx, ws.id, 'policy', now);
      await recordGovernance(tx, { action: 'policy.create', actorId: actor.id, actor: actor.email, target: `policy:${r.name}`, workspace: slug, details: { id: r.id, policy_version: Number(v) } });
      return { ...policyView(r), policy_version: Number(v) };
    } catch (err) {
      if (isUniqueViolation(err)) throw conflict(`policy already exists: ${input.name}`);
      throw err;
    }
  });
}

export async function updatePolicy(db: Db, actor: Actor, slug: string, id: string, input: PolicyInput, now: Date): Promise<PolicyView & { policy_version: number }> {
  parsePolicyId(id);
  const { resources, items } = checkPolicyInput(input);
  return db.transaction().execute(async (tx) => {
    const ws = await workspaceOf(tx, slug);
    try {
      const r = await tx.updateTable('policies').set({
        name: input.name.trim(), description: input.description ?? '', is_enabled: input.is_enabled ?? true,
        resources: JSON.stringify(resources), ...items,
        version: sql`version + 1`, updated_at: now,
      }).where('workspace_id', '=', ws.id).where('id', '=', id).returningAll().executeTakeFirst();
      if (!r) throw notFound(`policy does not exist: ${id}`);
      const v = await bump(tx, ws.id, 'policy', now);
      await recordGovernance(tx, { action: 'policy.update', actorId: actor.id, actor: actor.email, target: `policy:${r.name}`, workspace: slug, details: { id: r.id, policy_version: Number(v) } });
      return { ...policyView(r), policy_version: Number(v) };
    } catch (err) {
      if (isUniqueViolation(err)) throw conflict(`policy already exists: ${input.name}`);
      throw err;
    }
  });
}

export async function deletePolicy(db: Db, actor: Actor, slug: string, id: string, now: Date): Promise<number> {
  parsePolicyId(id);
  return db.transaction().execute(async (tx) => {
    const ws = await workspaceOf(tx, slug);
    const r = await tx.deleteFrom('policies').where('workspace_id', '=', ws.id).where('id', '=', id).returning(['id', 'name']).executeTakeFirst();
    if (!r) throw notFound(`policy does not exist: ${id}`);
    const v = await bump(tx, ws.id, 'policy', now);
    await recordGovernance(tx, { action: 'policy.delete', actorId: actor.id, actor: actor.email, target: `policy:${r.name}`, workspace: slug, details: { id: r.id, policy_version: Number(v) } });
    return Number(v);
  });
}

// ---------- tags (admin) ----------

const tagView = (r: { id: string; guid: string; type: string; attributes: Record<string, string>; resources: unknown; created_at: Date }): TagView =>
  ({ id: r.id, guid: r.guid, type: r.type, attributes: r.attributes, resources: r.resources as Record<string, string[]>, created_at: r.created_at });

export async function listTags(db: Db, slug: string): Promise<TagView[]> {
  const ws = await workspaceOf(db, slug);
  return (await db.selectFrom('policy_tags').selectAll().where('workspace_id', '=', ws.id).orderBy('id').execute()).map(tagView);
}

export async function createTag(db: Db, actor: Actor, slug: string, input: TagInput, now: Date): Promise<TagView & { tag_version: number }> {
  const resources = checkResources(input.resources);
  const type = input.type.trim();
  if (!/^[A-Za-z0-9_.:-]{1,255}$/.test(type)) throw badRequest(`invalid tag type "${input.type}": letters, digits, '_', '.', ':' and '-'`);
  return db.transaction().execute(async (tx) => {
    const ws = await workspaceOf(tx, slug);
    const r = await tx.insertInto('policy_tags').values({
      workspace_id: ws.id, type, attributes: JSON.stringify(input.attributes ?? {}), resources: JSON.stringify(resources), created_by: actor.id, created_at: now,
    }).returningAll().executeTakeFirstOrThrow();
    const v = await bump(tx, ws.id, 'tag', now);
    await recordGovernance(tx, { action: 'tag.create', actorId: actor.id, actor: actor.email, target: `tag:${type}`, workspace: slug, details: { id: r.id, resources, tag_version: Number(v) } });
    return { ...tagView(r), tag_version: Number(v) };
  });
}

export async function deleteTag(db: Db, actor: Actor, slug: string, id: string, now: Date): Promise<number> {
  if (!/^\d{1,18}$/.test(id)) throw notFound(`tag does not exist: ${id}`);
  return db.transaction().execute(async (tx) => {
    const ws = await workspaceOf(tx, slug);
    const r = await tx.deleteFrom('policy_tags').where('workspace_id', '=', ws.id).where('id', '=', id).returning(['id', 'type']).executeTakeFirst();
    if (!r) throw notFound(`tag does not exist: ${id}`);
    const v = await bump(tx, ws.id, 'tag', now);
    await recordGovernance(tx, { action: 'tag.delete', actorId: actor.id, actor: actor.email, target: `tag:${r.type}`, workspace: slug, details: { id: r.id, tag_version: Number(v) } });
    return Number(v);
  });
}

// ---------- the plugin API (Ranger shapes) ----------

const ms = (d: Date | null | undefined) => (d ? d.getTime() : null);

function rangerResources(r: Record<string, string[]>) {
  return Object.fromEntries(Object.entries(r).map(([k, values]) => [k, { values, isExcludes: false, isRecursive: false }]));
}

const rangerItem = (it: PolicyItem) => ({
  accesses: it.accesses.map((type) => ({ type, isAllowed: true })),
  users: it.users ?? [], groups: it.groups ?? [], roles: it.roles ?? [], conditions: [], delegateAdmin: it.delegate_admin ?? false,
});
const rangerItems = (items: PolicyItem[]) => items.map(rangerItem);

// Masks and row filters apply on select (the only access type of Ranger's Trino mask and
// row-filter definitions).
const rangerSelectItem = (it: Principals) => rangerItem({ ...it, accesses: ['select'] });
const rangerMaskItems = (items: MaskItem[]) => items.map((it) => ({
  ...rangerSelectItem(it), dataMaskInfo: { dataMaskType: it.type, ...(it.expression ? { valueExpr: it.expression } : {}) },
}));
const rangerRowFilterItems = (items: RowFilterItem[]) => items.map((it) => ({ ...rangerSelectItem(it), rowFilterInfo: { filterExpr: it.filter } }));
/** Ranger's policyType: 0 access, 1 data mask, 2 row filter. */
const policyType = (p: PolicyView) => (p.masks.length > 0 ? 1 : p.row_filters.length > 0 ? 2 : 0);

interface ServiceRow { id: string; slug: string; policy_version: number; policy_update_time: Date | null; tag_version: number; tag_update_time: Date | null; created_at: Date }

/** Every workspace is a policy service; numeric service ids follow workspace creation order. */
async function serviceRows(db: Db, slug?: string): Promise<ServiceRow[]> {
  const rows = await db.selectFrom('workspaces as w').leftJoin('policy_services as p', 'p.workspace_id', 'w.id')
    .select([
      sql<string>`row_number() OVER (ORDER BY w.created_at, w.slug)`.as('id'), 'w.slug', 'w.created_at',
      sql<string>`coalesce(p.policy_version, 0)`.as('policy_version'), 'p.policy_update_time',
      sql<string>`coalesce(p.tag_version, 0)`.as('tag_version'), 'p.tag_update_time',
    ]).orderBy('w.created_at').orderBy('w.slug').execute();
  return rows
    .filter((r) => slug === undefined || r.slug === slug)
    .map((r) => ({ ...r, policy_version: Number(r.policy_version), tag_version: Number(r.tag_version) }));
}

/** GET /service/plugins/services: RangerServiceList. */
export async function rangerServiceList(db: Db) {
  const rows = await serviceRows(db);
  return {
    startIndex: 0, pageSize: rows.length, totalCount: rows.length, resultSize: rows.length, sortType: 'asc', sortBy: 'serviceId',
    services: rows.map((r) => ({
      id: Number(r.id), guid: r.slug, isEnabled: true, createdBy: 'svc', updatedBy: 'svc',
      createTime: ms(r.created_at), updateTime: ms(r.policy_update_time ?? r.created_at), version: 1,
      type: SERVICE_TYPE, name: r.slug, displayName: r.slug, description: `workspace ${r.slug}`, configs: {},
      policyVersion: r.policy_version, policyUpdateTime: ms(r.policy_update_time),
      tagVersion: r.tag_version, tagUpdateTime: ms(r.tag_update_time),
    })),
  };
}

export type Download<T> = { kind: 'not_modified'; version: number } | { kind: 'ok'; version: number; body: T } | { kind: 'unknown' };

/** GET /service/plugins/policies/download/{service}: ServicePolicies, or 304 at lastKnownVersion. */
export async function downloadPolicies(db: Db, service: string, lastKnownVersion: number | undefined): Promise<Download<Record<string, unknown>>> {
  const ps = await findPolicyService(db, service);
  const [svc] = ps ? await serviceRows(db, ps.slug) : [];
  if (!ps || !svc) return { kind: 'unknown' };
  if (lastKnownVersion !== undefined && lastKnownVersion === svc.policy_version) return { kind: 'not_modified', version: svc.policy_version };
  const rows = await db.selectFrom('policies').selectAll().where('workspace_id', '=', ps.workspaceId).orderBy('id').execute();
  const policies = rows.map(policyView).map((p) => ({
    id: Number(p.id), guid: p.guid, isEnabled: p.is_enabled, version: p.version, service: service, name: p.name,
    policyType: policyType(p), policyPriority: 0, description: p.description, isAuditEnabled: true,
    resources: rangerResources(p.resources), additionalResources: [],
    policyItems: rangerItems(p.allow), denyPolicyItems: rangerItems(p.deny), allowExceptions: [], denyExceptions: [],
    dataMaskPolicyItems: rangerMaskItems(p.masks), rowFilterPolicyItems: rangerRowFilterItems(p.row_filters), serviceType: SERVICE_TYPE, options: {}, validitySchedules: [],
    policyLabels: [], zoneName: '', isDenyAllElse: false, createTime: ms(p.created_at), updateTime: ms(p.updated_at),
  }));
  return {
    kind: 'ok', version: svc.policy_version,
    body: {
      serviceName: service, serviceId: Number(svc.id), policyVersion: svc.policy_version,
      policyUpdateTime: ms(svc.policy_update_time), policies, serviceDef: serviceDef(), auditMode: 'audit-default', serviceConfig: {},
    },
  };
}

/** GET /service/tags/download/{service}: ServiceTags, or 304 at lastKnownVersion. */
export async function downloadTags(db: Db, service: string, lastKnownVersion: number | undefined): Promise<Download<Record<string, unknown>>> {
  const ps = await findPolicyService(db, service);
  const [svc] = ps ? await serviceRows(db, ps.slug) : [];
  if (!ps || !svc) return { kind: 'unknown' };
  if (lastKnownVersion !== undefined && lastKnownVersion === svc.tag_version) return { kind: 'not_modified', version: svc.tag_version };
  const rows = (await db.selectFrom('policy_tags').selectAll().where('workspace_id', '=', ps.workspaceId).orderBy('id').execute()).map(tagView);
  const types = [...new Set(rows.map((r) => r.type))].sort();
  const tagDefinitions: Record<string, unknown> = {};
  types.forEach((type, i) => {
    const attrs = [...new Set(rows.filter((r) => r.type === type).flatMap((r) => Object.keys(r.attributes)))].sort();
    tagDefinitions[String(i + 1)] = { id: i + 1, guid: `${service}:${type}`, name: type, source: 'svc', attributeDefs: attrs.map((name) => ({ name, type: 'string' })) };
  });
  const tags: Record<string, unknown> = {};
  const resourceToTagIds: Record<string, number[]> = {};
  const serviceResources = rows.map((r) => {
    tags[r.id] = { id: Number(r.id), guid: r.guid, type: r.type, owner: 0, attributes: r.attributes };
    resourceToTagIds[r.id] = [Number(r.id)];
    return { id: Number(r.id), guid: r.guid, serviceName: service, resourceElements: rangerResources(r.resources), isEnabled: true };
  });
  return {
    kind: 'ok', version: svc.tag_version,
    body: {
      op: 'add_or_update', serviceName: service, tagVersion: svc.tag_version, tagUpdateTime: ms(svc.tag_update_time),
      tagDefinitions, tags, serviceResources, resourceToTagIds, isDelta: false, tagsChangeExtent: 'ALL',
    },
  };
}
