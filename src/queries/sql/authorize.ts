// Which statements a role runs on the embedded engine, decided on what readStatement found
// (docs/engines.md "Statements"): ws_viewer reads (SELECT, and EXPLAIN [ANALYZE] of a SELECT);
// ws_editor and ws_admin also change their workspace's database. Every query and expression part
// is checked by the tree rules (rules.ts), and DuckDB's own statement type of what runs must be the
// one this module expects, so a statement read one way here and another way by DuckDB is refused.
import type { QueryRole } from '../types.js';
import { checkCalls, checkTree, TreeRefusal, type TableRef } from './rules.js';
import { explained, StatementRefusal, type QName, type Statement } from './statement.js';
import type { Token } from './lexer.js';

/** DuckDB's statement types (duckdb_statement_type) this module expects. */
// DuckDB parses ANALYZE as a VACUUM statement that only analyzes (VacuumStatement with analyze).
export const ST = { SELECT: 1, INSERT: 2, UPDATE: 3, EXPLAIN: 4, DELETE: 5, CREATE: 7, ALTER: 9, DROP: 15, VACUUM: 18 } as const;

export interface Authorized {
  /** Base table references of every part (for the lakehouse and policies). */
  reads: TableRef[];
  /** Objects the statement creates, changes or drops. */
  writes: QName[];
  /** DuckDB's statement type of what runs. */
  type: number;
}

export const VIEWER_ONLY = 'ws_viewer may only run SELECT and EXPLAIN on the embedded engine';

/** Throws StatementRefusal when `role` may not run `s`; else what it reads and writes. */
export function authorize(s: Statement, role: QueryRole): Authorized {
  const writes = role !== 'ws_viewer';
  const inner = explained(s);
  if (!writes && inner.kind !== 'select') throw new StatementRefusal(VIEWER_ONLY);
  const reads: TableRef[] = [];
  const check = (tree: unknown) => {
    try { reads.push(...checkTree(tree, { writes }).tables); } catch (err) {
      if (err instanceof TreeRefusal) throw new StatementRefusal(err.message);
      throw err;
    }
  };
  const calls = (tokens: readonly Token[]) => {
    try { checkCalls(tokens, { writes }); } catch (err) {
      if (err instanceof TreeRefusal) throw new StatementRefusal(err.message);
      throw err;
    }
  };
  let targets: QName[] = [];
  let type: number;
  switch (inner.kind) {
    case 'select': check(inner.tree); type = ST.SELECT; break;
    case 'insert': check(inner.query.tree); targets = [inner.target]; type = ST.INSERT; break;
    case 'create_table_as': check(inner.query.tree); targets = [inner.target]; type = ST.CREATE; break;
    case 'create_view': check(inner.query.tree); targets = [inner.target]; type = ST.CREATE; break;
    case 'update': check(inner.check); targets = [inner.target]; type = ST.UPDATE; break;
    case 'delete': check(inner.check); targets = [inner.target]; type = ST.DELETE; break;
    case 'create_table': calls([...inner.columns, ...(inner.options.partitionedBy ?? []), ...(inner.options.with ?? [])]); targets = [inner.target]; type = ST.CREATE; break;
    case 'ddl':
      calls(inner.tokens);
      targets = inner.targets;
      type = { create: ST.CREATE, alter: ST.ALTER, drop: ST.DROP, analyze: ST.VACUUM, truncate: ST.DELETE }[inner.action];
      break;
  }
  return { reads, writes: targets, type: s.kind === 'explain' ? ST.EXPLAIN : type };
}
