// What a query's parse tree may contain on the embedded engine (docs/engines.md "Statements").
// Table functions are an allow-list: the others read files (read_parquet, glob, ...), run SQL
// text (query, json_execute_serialized_sql), or show the server (duckdb_settings,
// duckdb_databases' paths, temporary files). Scalar functions are allowed but for the few that
// show the server's settings, change the connection's state or hold a thread past the timeout.
// A table name that is a path (`FROM '/x/y.parquet'`) would be a file read by a replacement scan.
import { TreeTooDeep, walk, type Node } from './parser.js';
import type { Token } from './lexer.js';

export const TABLE_FUNCTIONS = new Set([
  'range', 'generate_series', 'unnest', 'repeat', 'repeat_row', 'json_each', 'json_tree',
  'duckdb_columns', 'duckdb_constraints', 'duckdb_dependencies', 'duckdb_functions', 'duckdb_indexes', 'duckdb_keywords',
  'duckdb_schemas', 'duckdb_sequences', 'duckdb_tables', 'duckdb_types', 'duckdb_views',
  'pragma_table_info', 'pragma_show', 'summary', 'histogram', 'histogram_values', 'test_all_types', 'pg_timezone_names',
  'icu_calendar_names', 'sql_auto_complete',
]);

const DENIED_FUNCTIONS = new Map<string, string>([
  ['current_setting', 'shows the server\'s settings'],
  ['setseed', 'changes the connection\'s state'],
  ['currval', 'reads the connection\'s state'],
  ['pg_sleep', 'cannot be interrupted'],
  ['sleep_ms', 'cannot be interrupted'],
  ['write_log', 'writes to the server\'s log'],
  // the statement as it runs: a catalog table's files are named in it
  ['current_query', 'shows the statement as the server runs it'],
]);
/**
 * DuckDB's own views over the functions and settings refused here: a name in FROM reads them as a
 * table would (`FROM duckdb_databases` is `duckdb_databases()`, `pg_settings` is every setting).
 */
const DENIED_VIEWS = new Map<string, string>([
  ['duckdb_databases', 'shows the databases\' files'],
  ['pragma_database_list', 'shows the databases\' files'],
  ['pg_settings', 'shows the server\'s settings'],
  ['duckdb_logs', 'shows the server\'s log'],
]);
/** Functions that change the database: for roles that may write. */
const WRITING_FUNCTIONS = new Set(['nextval']);

export class TreeRefusal extends Error {}

export interface TableRef {
  catalog?: string;
  schema?: string;
  name: string;
  /** The BASE_TABLE node itself (rewriting replaces it). */
  node: Node;
}

export interface TreeFacts {
  /** Every base table reference (tables, views, CTE names). */
  tables: TableRef[];
  /** Functions called (lower case). */
  functions: Set<string>;
}

const fnName = (n: Node) => String(n.function_name ?? '').toLowerCase();
const isPathLike = (name: string) => /[/\\]|:\/\/|^~/.test(name);

/** Collects the tree's table references and functions; throws TreeRefusal for what is not allowed. */
export function checkTree(tree: unknown, opts: { writes: boolean }): TreeFacts {
  const facts: TreeFacts = { tables: [], functions: new Set() };
  const tableFunctionNodes = new Set<Node>();
  try {
    visitAll(tree, opts, facts, tableFunctionNodes);
  } catch (err) {
    if (err instanceof TreeTooDeep) throw new TreeRefusal(err.message);
    throw err;
  }
  return facts;
}

function visitAll(tree: unknown, opts: { writes: boolean }, facts: TreeFacts, tableFunctionNodes: Set<Node>): void {
  walk(tree, (n) => {
    if (n.type === 'TABLE_FUNCTION' && n.function && typeof n.function === 'object') {
      const f = n.function as Node;
      tableFunctionNodes.add(f);
      const name = fnName(f);
      if (!TABLE_FUNCTIONS.has(name)) throw new TreeRefusal(`table function ${name} is not allowed on the embedded engine`);
    } else if (n.type === 'BASE_TABLE') {
      const name = String(n.table_name ?? '');
      if (isPathLike(name)) throw new TreeRefusal(`a table name cannot be a file path or URL on the embedded engine: ${name.slice(0, 200)}`);
      const view = n.catalog_name === 'iceberg' ? undefined : DENIED_VIEWS.get(name.toLowerCase());
      if (view) throw new TreeRefusal(`${name} is not allowed on the embedded engine: it ${view}`);
      facts.tables.push({ catalog: (n.catalog_name as string) || undefined, schema: (n.schema_name as string) || undefined, name, node: n });
    } else if (n.class === 'FUNCTION' && !tableFunctionNodes.has(n)) {
      const name = fnName(n);
      facts.functions.add(name);
      const why = DENIED_FUNCTIONS.get(name);
      if (why) throw new TreeRefusal(`function ${name} is not allowed on the embedded engine: it ${why}`);
      if (!opts.writes && WRITING_FUNCTIONS.has(name)) throw new TreeRefusal(`function ${name} changes the database: ws_viewer may not call it`);
    }
  });
}

/**
 * The same function rules over text DuckDB runs as written, with no tree to read (a CREATE TABLE
 * column list's DEFAULT, CHECK and generated columns, ALTER's DEFAULT and USING): a name, quoted
 * or not, followed by `(` is a call. DuckDB refuses subqueries there, so no table can be read.
 */
export function checkCalls(tokens: readonly Token[], opts: { writes: boolean }): void {
  for (let i = 0; i + 1 < tokens.length; i++) {
    const t = tokens[i]!;
    if ((t.kind !== 'word' && t.kind !== 'quoted') || tokens[i + 1]!.text !== '(') continue;
    const name = t.value.toLowerCase();
    const why = DENIED_FUNCTIONS.get(name);
    if (why) throw new TreeRefusal(`function ${name} is not allowed on the embedded engine: it ${why}`);
    if (!opts.writes && WRITING_FUNCTIONS.has(name)) throw new TreeRefusal(`function ${name} changes the database: ws_viewer may not call it`);
  }
}
