// What the workspace's policies decide for one subject and one table on the embedded engine
// (docs/machines.md "Policies on the embedded engine"): a denied table, denied columns, column
// masks and a row filter. Pure: the policies come in prepared (preparePolicies), read and cached
// by workspace-policies.ts. The rules are Apache Ranger's as its Trino plugin applies them, read
// from Ranger's source (RangerDefaultPolicyResourceMatcher, RangerDefaultPolicyEvaluator,
// RangerOptimizedPolicyEvaluator, RangerPolicyRepository), with one deliberate difference: a deny
// item of a policy whose resources stop above the table (catalog or schema level) covers the
// tables below it, as the catalog's own check does (evaluate.ts), where Ranger would apply it only
// at its own level. Allow items grant nothing here: the workspace role decides the statement kinds.
import type { Subject } from './evaluate.js';
import type { MaskItem, PolicyItem, Principals, RowFilterItem } from './policies.js';
import { ACCESS_TYPES } from './service-def.js';

/** The accesses a statement on the embedded engine asks for: select reads; the others are deny only. */
export type EngineAccess = 'select' | 'insert' | 'update' | 'delete' | 'drop' | 'create' | 'alter';

/** A catalog table as the engine names it: `iceberg`, the dotted namespace, the table and the columns it has. */
export interface EngineTarget {
  /** The catalog's name, or its names: a policy naming any of them applies (`iceberg` and the warehouse, as the catalog matches). */
  catalog: string | readonly string[];
  schema: string;
  /** Absent for a statement on the schema itself (CREATE SCHEMA, DROP SCHEMA). */
  table?: string;
  /** Every column of the table (select only: the masks and denials are per column). */
  columns?: readonly string[];
}

export interface ColumnMask { policy: string; type: string; expression?: string }

export interface PolicyDecision {
  /** The statement is refused: the first policy denying the access on the table (or its schema). */
  denied?: { policy: string; access: EngineAccess };
  /** Columns the subject may not read, with the policy denying each (select). */
  deniedColumns: Map<string, string>;
  /** Masked columns (select; MASK_NONE leaves a column out: it is shown as it is). */
  masks: Map<string, ColumnMask>;
  /** The rows the subject sees (select). */
  rowFilter?: { policy: string; filter: string };
}

/** An enabled policy as stored (src/policy/policies.ts shapes). */
export interface StoredPolicy {
  name: string;
  resources: Record<string, string[]>;
  allow: PolicyItem[];
  deny: PolicyItem[];
  masks: MaskItem[];
  row_filters: RowFilterItem[];
}

const LEVELS = ['catalog', 'schema', 'table', 'column'] as const;

interface Matcher { any: boolean; re: RegExp }
interface Rule<I> { name: string; levels: Matcher[]; evalOrder: number; items: I[] }

/** One workspace's enabled policies, matchers compiled and each kind in Ranger's evaluation order. */
export interface WorkspacePolicies {
  /** The policy version they were read at (-1: no such workspace). */
  version: number;
  access: Array<Rule<PolicyItem>>;
  masks: Array<Rule<MaskItem>>;
  rowFilters: Array<Rule<RowFilterItem>>;
}

export const NO_POLICIES: WorkspacePolicies = { version: -1, access: [], masks: [], rowFilters: [] };

// Ranger's resource values: '*' any sequence, '?' one character, case-insensitive (the Trino
// service definition's matcherOptions wildCard and ignoreCase); a value of only '*' matches
// anything (isMatchAny), which is what lets a policy with more levels cover a shorter request.
function matcher(values: string[]): Matcher {
  const any = values.some((v) => /^\*+$/.test(v));
  const alternatives = values.map((v) => v.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[\\s\\S]*').replace(/\?/g, '[\\s\\S]'));
  return { any, re: new RegExp(`^(?:${alternatives.join('|')})$`, 'i') };
}

/** A request's value at one level: one name, or names any of which matches. */
type Level = string | readonly string[];
type MatchType = 'self' | 'self_and_descendants' | 'descendant' | 'ancestor' | 'none';

/** RangerDefaultPolicyResourceMatcher.getMatchType for a request naming the first `request.length` levels. */
function matchType(levels: Matcher[], request: readonly Level[]): MatchType {
  for (const [i, value] of request.entries()) {
    const m = levels[i];
    if (!m) return 'ancestor';
    if (!m.any && !(typeof value === 'string' ? [value] : value).some((v) => m.re.test(v))) return 'none';
  }
  if (levels.length > request.length) return levels.slice(request.length).every((m) => m.any) ? 'self_and_descendants' : 'descendant';
  return 'self';
}
/** Ranger applies a policy to a request at its own level (SELF) or covering it through '*' levels. */
const applies = (t: MatchType) => t === 'self' || t === 'self_and_descendants';
/** svc's deny rule: also a policy whose resources stop above the request (see the top of the file). */
const deniesOn = (t: MatchType) => applies(t) || t === 'ancestor';

/** RangerDefaultPolicyItemEvaluator.matchUserGroupAndOwner: a user, `{USER}` (anyone), a group, `public` (everyone) or a role. */
function names(item: Principals, who: Subject): boolean {
  const users = item.users ?? [];
  const groups = item.groups ?? [];
  if (who.users.length > 0 && users.some((u) => u === '{USER}' || who.users.includes(u))) return true;
  if (groups.some((g) => g === 'public' || who.groups.includes(g))) return true;
  return (item.roles ?? []).some((r) => who.roles.includes(r));
}

const grants = (item: PolicyItem, access: EngineAccess) => item.accesses.includes(access) || item.accesses.includes('all');

/**
 * RangerOptimizedPolicyEvaluator.computeEvalOrder: lower first. Discounts for wildcard resources
 * (25 a '*' level, 10 a level with '*' in a value, 5 with '?'; at most 100), for the users and
 * groups named (one each, at most 25; 25 with `public` or `{USER}`), for the access types
 * (25 x named / all the service's types) and for having no custom condition (25).
 */
function evalOrder(p: StoredPolicy): number {
  let resource = 0;
  for (const level of LEVELS) {
    const values = p.resources[level];
    if (!values || values.length === 0) continue;
    if (values.some((v) => v === '' || v === '*')) resource += 25;
    else if (values.some((v) => v.includes('*'))) resource += 10;
    else if (values.some((v) => v.includes('?'))) resource += 5;
  }
  const items: Principals[] = [...p.allow, ...p.deny, ...p.masks, ...p.row_filters];
  const users = new Set(items.flatMap((i) => i.users ?? []));
  const groups = new Set(items.flatMap((i) => i.groups ?? []));
  const everyone = [...groups].some((g) => g.toLowerCase() === 'public') || [...users].some((u) => u.toUpperCase() === '{USER}');
  // Mask and row-filter items are downloaded with the access select (policies.ts).
  const accesses = new Set([...p.allow, ...p.deny].flatMap((i) => i.accesses));
  if (p.masks.length + p.row_filters.length > 0) accesses.add('select');
  return 10_000 - Math.min(100, resource) - (everyone ? 25 : Math.min(25, users.size + groups.size))
    - Math.round((25 * accesses.size) / ACCESS_TYPES.length) - 25;
}

/** The policy's matchers from the catalog down, up to its first missing level. */
function levels(resources: Record<string, string[]>): Matcher[] {
  const out: Matcher[] = [];
  for (const level of LEVELS) {
    const values = resources[level];
    if (!values || values.length === 0) break;
    out.push(matcher(values));
  }
  return out;
}

/**
 * Ranger's PolicyEvalOrderComparator: priority (all of svc's are 0), policies with deny items
 * first, then evalOrder, then the name. Mask and row-filter candidates are ordered the same way
 * (RangerPolicyRepository.getLikelyMatchPolicyEvaluators sorts them with it).
 */
function ranked<I>(rows: StoredPolicy[], items: (p: StoredPolicy) => I[], hasDeny: (p: StoredPolicy) => boolean): Array<Rule<I>> {
  return rows.filter((p) => items(p).length > 0)
    .map((p) => ({ deny: hasDeny(p), rule: { name: p.name, levels: levels(p.resources), evalOrder: evalOrder(p), items: items(p) } }))
    .sort((a, b) => Number(b.deny) - Number(a.deny) || a.rule.evalOrder - b.rule.evalOrder || (a.rule.name < b.rule.name ? -1 : a.rule.name > b.rule.name ? 1 : 0))
    .map((x) => x.rule);
}

/** Compiles one workspace's enabled policies (stored resources are a prefix of catalog > schema > table > column). */
export function preparePolicies(rows: StoredPolicy[], version: number): WorkspacePolicies {
  return {
    version,
    access: ranked(rows, (p) => p.deny, (p) => p.deny.length > 0),
    masks: ranked(rows, (p) => p.masks, () => false),
    rowFilters: ranked(rows, (p) => p.row_filters, () => false),
  };
}

/** The first rule (in order) that applies to `request` and has an item naming `who` (and granting `ok`). */
function first<I extends Principals>(rules: Array<Rule<I>>, request: readonly Level[], applied: (t: MatchType) => boolean, who: Subject, ok: (i: I) => boolean = () => true) {
  for (const rule of rules) {
    if (!applied(matchType(rule.levels, request))) continue;
    const item = rule.items.find((i) => names(i, who) && ok(i));
    if (item) return { policy: rule.name, item };
  }
  return undefined;
}

/**
 * What applies to `who` doing `access` on `target`. A denied table (or schema) ends the decision.
 * For select: each column's first denying column-level policy; each other column's first
 * matching mask policy and, within it, the first item naming the subject (MASK_NONE decides that
 * the column is shown as it is); the first matching row-filter policy and item likewise.
 */
export function decide(p: WorkspacePolicies, who: Subject, target: EngineTarget, access: EngineAccess): PolicyDecision {
  const out: PolicyDecision = { deniedColumns: new Map(), masks: new Map() };
  const base: Level[] = target.table === undefined ? [target.catalog, target.schema] : [target.catalog, target.schema, target.table];
  const hit = first(p.access, base, deniesOn, who, (i) => grants(i, access));
  if (hit) return { ...out, denied: { policy: hit.policy, access } };
  if (access !== 'select' || target.table === undefined) return out;
  for (const column of target.columns ?? []) {
    const request = [...base, column];
    const deny = first(p.access, request, (t) => t === 'self', who, (i) => grants(i, 'select'));
    if (deny) { out.deniedColumns.set(column, deny.policy); continue; }
    const mask = first(p.masks, request, applies, who);
    if (mask && mask.item.type !== 'MASK_NONE') {
      out.masks.set(column, { policy: mask.policy, type: mask.item.type, ...(mask.item.expression ? { expression: mask.item.expression } : {}) });
    }
  }
  const filter = first(p.rowFilters, base, applies, who);
  if (filter) out.rowFilter = { policy: filter.policy, filter: filter.item.filter };
  return out;
}
