// Reading catalog tables in a statement (docs/engines.md "The lakehouse"): every reference to
// `iceberg.<namespace>.<table>` in the statement's parse trees is replaced, on the tree, by a
// subquery that reads the table's planned files. The subquery is made from SQL svc writes (paths in
// the workspace's cache, quoted names), parsed by DuckDB, and put where the reference was, keeping
// its alias, column aliases and sample, so the user's SQL around it (joins, CTEs, subqueries,
// EXPLAIN) reads the table as if DuckDB had it. Time travel (`AT (VERSION => ...)`, `AT (TIMESTAMP
// => ...)`, and Trino's FOR ... AS OF turned into those) selects the snapshot; the query's own
// predicates on the table prune files in planning.
import { bindFilter } from '../../iceberg/expressions.js';
import { planScan, type ScanPlan } from '../../iceberg/planner.js';
import { IcebergFormatError } from '../../iceberg/errors.js';
import type { ContentFile } from '../../iceberg/manifests.js';
import { selectSnapshot, tableInfo } from '../../iceberg/table.js';
import type { Schema } from '../../iceberg/types.js';
import { QueryFailure } from '../types.js';
import { walk, type Node, type ScalarQuery, type SqlParser } from '../sql/parser.js';
import { CATALOG, duckType, levelsOf, qualifiedName, schemaOf } from './names.js';
import { quoteIdent } from '../sql/lexer.js';
import { replaceNode, subquery } from '../sql/build.js';
import { decide } from '../../policy/decide.js';
import type { Subject } from '../../policy/evaluate.js';
import { PolicyRefusal, tablePolicySql, type TablePolicySql } from './policy-sql.js';
import { owningSelect, pushdownFilter } from './pushdown.js';
import { emptySql, scanSql } from './scan-sql.js';
import type { Lakehouse } from './lakehouse.js';
import { MAX_VIEW_DEPTH, viewQuery } from './views.js';

export interface RewriteContext {
  workspaceId: string;
  /** Who the statement runs for, as policy items name people: user, groups, workspace role. */
  subject: Subject;
  parser: SqlParser;
  /** Runs a one-value query on the statement's connection (the policies' aggregate list). */
  scalar: ScalarQuery;
  /** The value of a constant expression (time travel's point in time), computed by the engine. */
  evaluate: (expr: Node, as: 'bigint' | 'epoch_ms') => Promise<string>;
  signal?: AbortSignal;
  /** Views being read around this statement (a view reading a view goes one deeper). */
  viewDepth?: number;
  /** Catalog tables and views the statement has read so far, views' own included (shared by the nested rewrites). */
  reads?: { n: number };
}

/**
 * References one statement may read, each view's own counted: views reading views each several
 * times multiply (8 levels of views naming the next 10 times are 10^8 scans), and the rewrite,
 * in this process, would run on past any timeout.
 */
export const MAX_CATALOG_READS = 1000;

export interface Rewritten {
  /** Tables read, for the caller's records. */
  tables: Array<{ name: string; snapshotId: string | null; files: number; skippedFiles: number }>;
  release: () => void;
}

const isCatalogRef = (n: Node) => n.type === 'BASE_TABLE' && n.catalog_name === CATALOG;

/** Replaces every catalog table reference in `trees` (in place); the files stay held until `release`. */
export async function readCatalogTables(lh: Lakehouse, ctx: RewriteContext, trees: Node[]): Promise<Rewritten> {
  const refs: Node[] = [];
  walk(trees, (n) => {
    // DESCRIBE reads the stub's columns (names and types), no data: leave it to the stub.
    if (n.type === 'SHOW_REF' && n.show_type === 'DESCRIBE') { markDescribed(n); return; }
    if (isCatalogRef(n) && !described.has(n)) refs.push(n);
  });
  const releases: Array<() => void> = [];
  const out: Rewritten = { tables: [], release: () => { for (const r of releases.splice(0)) r(); } };
  ctx.reads ??= { n: 0 };
  try {
    for (const ref of refs) {
      if (++ctx.reads.n > MAX_CATALOG_READS) throw new QueryFailure('refused', `the statement reads catalog tables and views more than ${MAX_CATALOG_READS} times, counting what its views read`);
      out.tables.push(await replace(lh, ctx, trees, ref, releases));
    }
    return out;
  } catch (err) {
    out.release();
    throw err;
  }
}

const described = new WeakSet<Node>();
function markDescribed(show: Node): void { walk(show, (n) => { if (isCatalogRef(n)) described.add(n); }); }

async function replace(lh: Lakehouse, ctx: RewriteContext, trees: Node[], ref: Node, releases: Array<() => void>) {
  const levels = levelsOf(String(ref.schema_name ?? ''));
  const name = String(ref.table_name);
  const shown = qualifiedName(levels, name);
  const entry = await lh.catalog.load(ctx.workspaceId, levels, name);
  if (!entry) throw new QueryFailure('failed', `Catalog Error: Table with name ${shown} does not exist`);
  if (entry.kind === 'view') return replaceView(lh, ctx, ref, levels, name, shown, entry.metadata, releases);

  const at = ref.at_clause as { unit: string; expr: Node } | null;
  const selection = at ? await snapshotOf(ctx, at) : {};
  let plan: ScanPlan;
  let policy: TablePolicySql | null;
  try {
    const schema = selectSnapshot(tableInfo(entry.metadata), selection).schema;
    const columns = schema.struct.fields.map((f) => ({ name: f.name, type: duckType(f.type) }));
    policy = await policyOf(lh, ctx, levels, name, shown, columns);
    // the query's own predicates on this table, each kept only if it binds to the table's schema;
    // never one on a masked or denied column (the query compares the masked value)
    const filter = queryFilter(trees, ref, name, schema, new Set(policy?.columns.keys() ?? []));
    // the data files are copied into the cache as planning finds them, not after it
    const early = lh.files.prefetch(ctx.workspaceId, ctx.signal);
    releases.push(early.release);
    const onFiles = (files: ContentFile[]) => early.add(files.filter((f) => f.format.toLowerCase() === 'parquet').map((f) => f.path));
    plan = await planScan(entry.metadata, { ...selection, filter, signal: ctx.signal, onFiles }, lh.manifests(ctx.workspaceId));
  } catch (err) {
    if (err instanceof IcebergFormatError) throw new QueryFailure('failed', `${shown}: ${err.message}`);
    if (err instanceof PolicyRefusal) throw new QueryFailure('refused', err.message);
    throw err;
  }

  const node = await scanNode(lh, ctx, shown, plan, plan.tasks, releases, !!policy);
  if (policy) applyPolicy(node, plan.schema.struct.fields.map((f) => f.name), policy);
  substitute(ref, node, name, (ref.column_name_alias as string[] | undefined) ?? []);
  return { name: shown, snapshotId: plan.snapshotId === null ? null : String(plan.snapshotId), files: plan.tasks.length, skippedFiles: plan.skippedFiles };
}

/** The reference becomes `(<node>) AS <its alias, else the name>`, keeping its sample; `columns` name the subquery's columns. */
function substitute(ref: Node, node: Node, name: string, columns: string[]): void {
  replaceNode(ref, { ...subquery({ node }, String(ref.alias || name), columns), sample: ref.sample ?? null });
}

/** A catalog view: its query (names resolved, tables rewritten for the reader, policies on the view applied) in place of the reference. */
async function replaceView(lh: Lakehouse, ctx: RewriteContext, ref: Node, levels: string[], name: string, shown: string, metadata: Record<string, unknown>, releases: Array<() => void>) {
  const depth = (ctx.viewDepth ?? 0) + 1;
  if (depth > MAX_VIEW_DEPTH) throw new QueryFailure('refused', `${shown}: views read views more than ${MAX_VIEW_DEPTH} deep (a view that reads itself?)`);
  if (ref.at_clause) throw new QueryFailure('refused', `${shown} is a view: time travel applies to tables`);
  const view = await viewQuery(ctx.parser, metadata, shown);
  const inner = await readCatalogTables(lh, { ...ctx, viewDepth: depth }, [view.tree]);
  releases.push(inner.release);
  let node = view.tree.node as Node;
  const names = view.columns.map((c) => c.name);
  const named = (ref.column_name_alias as string[] | undefined)?.length ? ref.column_name_alias as string[] : names;
  let policy: TablePolicySql | null;
  try {
    policy = await policyOf(lh, ctx, levels, name, shown, view.columns);
  } catch (err) {
    if (err instanceof PolicyRefusal) throw new QueryFailure('refused', err.message);
    throw err;
  }
  if (policy) {
    const wrapper = await ctx.parser.parse(`SELECT ${names.map(quoteIdent).join(', ')} FROM (SELECT 1) AS __svc_raw`);
    if (!wrapper.ok) throw new Error('the view wrapper did not parse');
    const outer = wrapper.statements[0]!.node as Node;
    Object.assign(outer.from_table as Node, { subquery: { node, named_param_map: [] }, column_name_alias: names });
    applyPolicy(outer, names, policy);
    node = outer;
  }
  substitute(ref, node, name, policy ? (ref.column_name_alias as string[] | undefined) ?? [] : named);
  return { name: shown, snapshotId: null, files: 0, skippedFiles: 0 };
}

/**
 * The SELECT that reads `tasks` of a plan (with the deletes that apply to them) from the workspace's
 * cache; the files stay held until the caller's releases run. With `wrapped`, the scan sits in a
 * subquery whose projection a policy rewrites.
 */
export async function scanNode(lh: Lakehouse, ctx: Pick<RewriteContext, 'workspaceId' | 'parser' | 'signal'>, shown: string, plan: ScanPlan, tasks: ScanPlan['tasks'], releases: Array<() => void>, wrapped = false): Promise<Node> {
  const used = [...new Set(tasks.flatMap((t) => t.deletes))].sort((a, b) => a - b);
  const deleteFiles = used.map((i) => plan.deleteFiles[i]!);
  for (const d of deleteFiles) {
    if (d.file.format.toLowerCase() !== 'parquet') throw new QueryFailure('failed', `${shown}: delete files in ${d.file.format} (deletion vectors) are not read on the embedded engine yet`);
  }
  for (const t of tasks) {
    if (t.file.format.toLowerCase() !== 'parquet') throw new QueryFailure('failed', `${shown}: data files in ${t.file.format} are not read on the embedded engine (Parquet only)`);
  }
  const locations = [...tasks.map((t) => t.file.path), ...deleteFiles.map((d) => d.file.path)];
  const held = await lh.files.hold(ctx.workspaceId, locations, ctx.signal);
  releases.push(held.release);
  const local = held.files;
  const renumber = new Map(used.map((i, k) => [i, k]));
  const scan = scanSql({
    schema: plan.schema,
    tasks: tasks.map((t, i) => ({ file: { local: local[i]! }, deletes: t.deletes.map((d) => renumber.get(d)!) })),
    deletes: deleteFiles.map((d, i) => ({ local: local[tasks.length + i]!, content: d.file.content as 1 | 2, equalityIds: d.file.equalityIds })),
    cacheDir: lh.files.dir(ctx.workspaceId),
  }) ?? emptySql(plan.schema);
  const names = plan.schema.struct.fields.map((f) => quoteIdent(f.name));
  const parsed = await ctx.parser.parse(wrapped ? `SELECT ${names.join(', ')} FROM (${scan}) AS __svc_raw` : scan);
  if (!parsed.ok || parsed.statements.length !== 1) throw new Error(`the scan of ${shown} did not parse: ${parsed.ok ? 'several statements' : parsed.message}`);
  return parsed.statements[0]!.node as Node;
}

/** What the workspace's policies leave of the table to this subject, or null with the policy service off. */
async function policyOf(lh: Lakehouse, ctx: RewriteContext, levels: string[], name: string, shown: string, columns: Array<{ name: string; type: string }>): Promise<TablePolicySql | null> {
  if (!lh.policies) return null;
  const { slug } = await lh.catalog.tenant(ctx.workspaceId);
  const rules = await lh.policies.load(slug);
  const decision = decide(rules, ctx.subject, { catalog: [CATALOG, slug], schema: schemaOf(levels), table: name, columns: columns.map((c) => c.name) }, 'select');
  const sql = await tablePolicySql({ parser: ctx.parser, user: ctx.subject.users[0] ?? '', aggregates: await lh.aggregates(ctx.scalar) }, shown, decision, columns);
  return sql.columns.size === 0 && !sql.where ? null : sql;
}

/** Puts the mask and denial expressions in the projection (under each column's name) and the row filter in WHERE. */
function applyPolicy(select: Node, names: string[], policy: TablePolicySql): void {
  const list = select.select_list as Node[];
  names.forEach((name, i) => {
    const expr = policy.columns.get(name);
    if (expr) list[i] = { ...expr, alias: name };
  });
  if (policy.where) select.where_clause = policy.where;
}

/** The conjuncts of the query's WHERE on table reference `ref` that planning can prune with (none on `excluded` columns). */
export function queryFilter(trees: Node[], ref: Node, name: string, schema: Schema, excluded: Set<string>): unknown {
  const owner = owningSelect(trees, ref);
  return owner ? bound(pushdownFilter(owner.select.where_clause as Node | null, {
    names: [String(ref.alias || ''), name].filter(Boolean), alone: owner.alone,
    columns: new Set(schema.struct.fields.map((f) => f.name)), excluded,
  }), schema) : undefined;
}

/** The conjuncts of `filter` that bind to the schema (one that does not is left out: the query keeps it). */
function bound(filter: Record<string, unknown> | undefined, schema: Schema): unknown {
  if (!filter) return undefined;
  const parts: Array<Record<string, unknown>> = [];
  const split = (f: Record<string, unknown>) => { if (f.type === 'and') { split(f.left as Record<string, unknown>); split(f.right as Record<string, unknown>); } else parts.push(f); };
  split(filter);
  const ok = parts.filter((p) => { try { bindFilter(p, schema); return true; } catch { return false; } });
  return ok.length === 0 ? undefined : ok.reduce((l, r) => ({ type: 'and', left: l, right: r }));
}

export async function snapshotOf(ctx: RewriteContext, at: { unit: string; expr: Node }): Promise<{ snapshotId?: string; asOfTimestampMs?: number }> {
  const unit = at.unit.toUpperCase();
  if (unit === 'VERSION') {
    const v = await ctx.evaluate(at.expr, 'bigint');
    if (!/^-?\d+$/.test(v)) throw new QueryFailure('failed', `FOR VERSION AS OF needs a snapshot id, not ${v.slice(0, 60)}`);
    return { snapshotId: v };
  }
  if (unit === 'TIMESTAMP') {
    const ms = Number(await ctx.evaluate(at.expr, 'epoch_ms'));
    if (!Number.isFinite(ms)) throw new QueryFailure('failed', 'FOR TIMESTAMP AS OF needs a point in time');
    return { asOfTimestampMs: ms };
  }
  throw new QueryFailure('refused', `time travel by ${unit.slice(0, 20)} is not supported: use VERSION or TIMESTAMP`);
}
