// Catalog views on the embedded engine (docs/engines.md "The lakehouse"): a view is its SQL, read
// from the view's current version (the `duckdb` representation, else Trino's, else Spark's, as
// Trino itself prefers its own dialect), parsed by DuckDB and held to the same tree rules as a
// person's SELECT. Its table names resolve in the workspace's catalog only: `t` and `ns.t` against
// the version's default namespace, `<default-catalog>.ns.t` and `iceberg.ns.t` as catalog
// tables; any other name is refused, so a view reaches nothing its reader's statement could not.
// The view runs with the reader's rights: the tables it reads are rewritten with the reader's
// policies (invoker security, as Trino's `SECURITY INVOKER`).
import { checkTree, TreeRefusal } from '../sql/rules.js';
import { MAX_TREE_DEPTH, type Node, type SqlParser } from '../sql/parser.js';
import { QueryFailure } from '../types.js';
import { CATALOG, duckType, schemaOf } from './names.js';
import { parseSchema } from '../../iceberg/types.js';

type Json = Record<string, unknown>;
/** Views reading views, at most this deep (a view naming itself stops here). */
export const MAX_VIEW_DEPTH = 8;
const DIALECTS = ['duckdb', 'trino', 'spark'];

export interface ViewQuery {
  /** The view's statement tree, its catalog names made `iceberg.<ns>.<t>`. */
  tree: Node;
  /** The view's columns (names and DuckDB types), from its schema. */
  columns: Array<{ name: string; type: string }>;
}

export async function viewQuery(parser: SqlParser, metadata: Json, shown: string): Promise<ViewQuery> {
  const version = ((metadata.versions as Json[] | undefined) ?? []).find((v) => v['version-id'] === metadata['current-version-id']);
  if (!version) throw new QueryFailure('failed', `${shown}: the view has no current version`);
  const reps = ((version.representations as Json[] | undefined) ?? []).filter((r) => r.type === 'sql' && typeof r.sql === 'string');
  const rep = DIALECTS.map((d) => reps.find((r) => String(r.dialect).toLowerCase() === d)).find(Boolean) ?? reps[0];
  if (!rep) throw new QueryFailure('failed', `${shown}: the view has no SQL representation`);
  const parsed = await parser.parse(String(rep.sql));
  if (!parsed.ok || parsed.statements.length !== 1) {
    throw new QueryFailure('failed', `${shown}: the view's ${String(rep.dialect)} SQL is not one query DuckDB reads${parsed.ok ? '' : `: ${parsed.message.replace(/\s*\n\s*/g, ' ').slice(0, 300)}`}`);
  }
  const tree = parsed.statements[0]!;
  try { checkTree(tree, { writes: false }); } catch (err) {
    if (err instanceof TreeRefusal) throw new QueryFailure('refused', `${shown}: ${err.message}`);
    throw err;
  }
  const namespace = (version['default-namespace'] as string[] | undefined) ?? [];
  const defaultCatalog = typeof version['default-catalog'] === 'string' ? version['default-catalog'] : undefined;
  resolveNames(tree, namespace, defaultCatalog, shown);
  const schema = ((metadata.schemas as Json[] | undefined) ?? []).find((s) => s['schema-id'] === version['schema-id']);
  let columns: ViewQuery['columns'];
  try {
    columns = parseSchema(schema, 2, true).struct.fields.map((f) => ({ name: f.name, type: duckType(f.type) }));
  } catch {
    throw new QueryFailure('failed', `${shown}: the view's schema cannot be read`);
  }
  return { tree, columns };
}

/**
 * Makes every table name of the view a catalog name, or refuses it. A bare name stays as it is only
 * where one of the view's own CTEs of that name is in scope (DuckDB reads it as the CTE there):
 * elsewhere, a CTE's name would be a table of the reader's own database.
 */
function resolveNames(tree: Node, namespace: string[], defaultCatalog: string | undefined, shown: string): void {
  inScope(tree, new Set(), 0, (n, ctes) => {
    if (n.type !== 'BASE_TABLE') return;
    const catalog = String(n.catalog_name ?? '');
    const schema = String(n.schema_name ?? '');
    const table = String(n.table_name ?? '');
    if (!catalog && !schema && ctes.has(table.toLowerCase())) return;
    if (!catalog && !schema) {
      if (namespace.length === 0) throw new QueryFailure('failed', `${shown}: the view names ${table} and has no default namespace`);
      n.schema_name = schemaOf(namespace);
    } else if (catalog && catalog !== CATALOG && catalog !== defaultCatalog) {
      throw new QueryFailure('refused', `${shown}: the view reads ${catalog}.${schema}.${table}, outside the workspace's catalog`);
    }
    n.catalog_name = CATALOG;
  });
}

/**
 * Visits every object node with the CTE names in scope there: a query node's CTEs are seen by the
 * rest of that node and what it holds, and each CTE's own query sees those declared before it and
 * itself (WITH RECURSIVE). The tree passed the rules' walk, which bounds its depth.
 */
function inScope(node: unknown, ctes: ReadonlySet<string>, depth: number, visit: (n: Node, ctes: ReadonlySet<string>) => void): void {
  if (node === null || typeof node !== 'object') return;
  if (depth > MAX_TREE_DEPTH) throw new QueryFailure('refused', `the view is nested more than ${MAX_TREE_DEPTH} levels deep`);
  if (Array.isArray(node)) { for (const x of node) inScope(x, ctes, depth + 1, visit); return; }
  const n = node as Node;
  visit(n, ctes);
  const entries = (n.cte_map as { map?: Array<{ key: string; value: unknown }> } | undefined)?.map ?? [];
  const all = new Set(ctes);
  entries.forEach((e) => {
    all.add(String(e.key).toLowerCase());
    inScope(e.value, new Set(all), depth + 1, visit);
  });
  for (const [k, v] of Object.entries(n)) {
    if (k !== 'cte_map' && v !== null && typeof v === 'object') inScope(v, all, depth + 1, visit);
  }
}
