// Parse-tree nodes built by svc, in the shape json_serialize_sql writes them, for statements
// rewritten on the tree (docs/engines.md "Statements"): a query is changed by replacing nodes,
// never by splicing text, so nothing a user wrote can end up outside the node it was parsed into.
import { walk, type Node } from './parser.js';

/** DuckDB's "no location" (2^64 - 1); JSON numbers cannot hold it exactly, and DuckDB takes 0 as well. */
const NO_LOCATION = 0;

const selectNode = (fields: Partial<Node>): Node => ({
  type: 'SELECT_NODE', modifiers: [], cte_map: { map: [] }, select_list: [star()],
  from_table: { type: 'EMPTY', alias: '', sample: null, query_location: NO_LOCATION },
  where_clause: null, group_expressions: [], group_sets: [], aggregate_handling: 'STANDARD_HANDLING', having: null, sample: null, qualify: null,
  ...fields,
});

export const star = (): Node => ({
  class: 'STAR', type: 'STAR', alias: '', query_location: NO_LOCATION, relation_name: '', exclude_list: [], replace_list: [],
  columns: false, expr: null, qualified_exclude_list: [], rename_list: [],
});

export const constant = (value: number | string | boolean | null): Node => ({
  class: 'CONSTANT', type: 'VALUE_CONSTANT', alias: '', query_location: NO_LOCATION,
  value: value === null ? { type: { id: 'NULL', type_info: null }, is_null: true }
    : { type: { id: typeof value === 'number' ? 'INTEGER' : typeof value === 'boolean' ? 'BOOLEAN' : 'VARCHAR', type_info: null }, is_null: false, value },
});

/** A subquery table reference over a statement (`(<statement>) AS alias`). */
export const subquery = (statement: Node, alias: string, columns: string[] = []): Node => ({
  type: 'SUBQUERY', alias, sample: null, query_location: NO_LOCATION, subquery: { node: statement.node, named_param_map: [] }, column_name_alias: columns,
});

/** Makes `target` the node `by` in place (a parent's reference to it then reads `by`). */
export function replaceNode(target: Node, by: Node): void {
  for (const k of Object.keys(target)) delete target[k];
  Object.assign(target, by);
}

/** Puts `expr` where a template statement has its NULL constant (templates svc writes hold one). */
export function fillNullSlot(statement: Node, expr: Node): Node {
  let slot: Node | undefined;
  walk(statement, (n) => { if (n.class === 'CONSTANT' && (n.value as Node)?.is_null === true) slot = n; });
  if (!slot) throw new Error('the template has no NULL slot');
  replaceNode(slot, expr);
  return statement;
}

/** `SELECT * FROM (<statement>) LIMIT 0`: the statement's columns, computing nothing. */
export function limitZero(statement: Node): Node {
  return {
    node: selectNode({
      modifiers: [{ type: 'LIMIT_MODIFIER', limit: constant(0), offset: null }],
      from_table: subquery(statement, 'described'),
    }),
    named_param_map: statement.named_param_map ?? [],
  };
}
