// From the text a person sent to the SQL DuckDB runs, on the embedded engine (docs/engines.md
// "Statements" and "The lakehouse"): Trino's time-travel words become DuckDB's, the statement is
// read from DuckDB's parse trees and allowed by the role, names are checked to stay inside the
// workspace's own database or its catalog (`iceberg`), the `iceberg` stubs are brought up to the
// catalog when the statement names it or reads metadata, and every catalog table it reads is
// rewritten on the tree into a scan of the table's files. What runs is printed from the trees.
import type { DuckDBConnection } from '@duckdb/node-api';
import { QueryFailure, type EngineResult, type EngineRun } from './types.js';
import { duckdbParser, TreeTooLarge, walk, type Node, type ScalarQuery, type SqlParser } from './sql/parser.js';
import { fillNullSlot } from './sql/build.js';
import { explained, readStatement, render, SqlSyntaxError, StatementRefusal, type QName, type Statement } from './sql/statement.js';
import { authorize, type Authorized } from './sql/authorize.js';
import { trinoTimeTravel } from './sql/time-travel.js';
import type { Lakehouse } from './lakehouse/lakehouse.js';
import { CATALOG } from './lakehouse/names.js';
import { readCatalogTables, type RewriteContext } from './lakehouse/rewrite.js';
import { runCatalogWrite, writesCatalog } from './lakehouse/write.js';
import { scalarOn, type Db } from './embedded-db.js';

export interface PreparedStatement {
  sql: string;
  auth: Authorized;
  statement: Statement;
  parser: SqlParser;
  /** Lets go of the table files the statement reads (after it ran). */
  release: () => void;
  /** What runs is SQL svc wrote around the person's (catalog tables read or written): its text is not theirs to see. */
  rewritten: boolean;
  /** A statement that writes catalog tables runs here instead of as SQL (lakehouse/write.ts). */
  write?: () => Promise<EngineResult>;
}

const METADATA_FUNCTIONS = new Set(['duckdb_tables', 'duckdb_columns', 'duckdb_schemas', 'duckdb_views', 'duckdb_constraints', 'duckdb_dependencies', 'pragma_table_info', 'pragma_show', 'summary']);

/** `parse` runs the parser's statements (on the parser database: embedded-parser.ts); `conn` the rest. */
export async function prepareStatement(conn: DuckDBConnection, db: Db, parse: ScalarQuery, q: EngineRun, lh: Lakehouse | undefined): Promise<PreparedStatement> {
  const scalar = (sql: string, arg: string) => scalarOn(conn, sql, arg);
  const parser = duckdbParser(parse, q.workspaceId);
  try {
    const statement = await readStatement(trinoTimeTravel(q.sql), parser);
    const auth = authorize(statement, q.role);
    for (const t of auth.writes) checkName(t, db.name, 'write');
    for (const t of auth.reads) checkName(t, db.name, 'read');
    const inner = explained(statement);
    const catalogWrite = writesCatalog(inner);
    if (catalogWrite && !lh) throw new QueryFailure('refused', 'catalog tables (iceberg.<namespace>.<table>) need the catalog: catalog.enabled is false');
    if (catalogWrite && statement.kind === 'explain') throw new QueryFailure('refused', 'EXPLAIN of a write to a catalog table is not supported on the embedded engine');
    // A catalog DELETE reads its target file by file (lakehouse/write.ts): its check is not rewritten here.
    const trees = catalogWrite && inner.kind === 'delete' ? [] : treesOf(statement);
    const catalogRead = auth.reads.some((t) => t.catalog === CATALOG);
    if (catalogRead || readsMetadata(trees)) {
      if (!lh) {
        if (catalogRead) throw new QueryFailure('refused', 'catalog tables (iceberg.<namespace>.<table>) need the catalog: catalog.enabled is false');
      } else {
        await lh.stubs.sync(db.instance, conn, q.workspaceId);
      }
    }
    if (!catalogWrite && (!catalogRead || !lh)) return { sql: render(statement), auth, statement, parser, release: () => undefined, rewritten: false };
    if (!catalogWrite && inner.kind === 'create_view') throw new QueryFailure('refused', 'a view of the workspace\'s database cannot read catalog tables: create the view in the catalog');
    if (!catalogWrite && (inner.kind === 'update' || inner.kind === 'delete')) throw new QueryFailure('refused', `${inner.kind.toUpperCase()} of the workspace's database cannot read catalog tables: use INSERT ... SELECT`);
    const rewrite: RewriteContext = {
      workspaceId: q.workspaceId, parser, scalar, signal: q.signal,
      subject: { users: [q.user], groups: q.groups, roles: [q.role] },
      evaluate: (expr, as) => evaluate(conn, parser, expr, as),
    };
    const read = await readCatalogTables(lh!, rewrite, trees);
    try {
      const printed = new Map<Node, string>();
      for (const t of trees) printed.set(t, await parser.print(t));
      const prepared: PreparedStatement = { sql: render(statement, (p) => printed.get(p.tree) ?? p.text), auth, statement, parser, release: read.release, rewritten: true };
      if (catalogWrite) {
        const query = inner.kind === 'insert' || inner.kind === 'create_table_as' ? printed.get(inner.query.tree) ?? inner.query.text : undefined;
        prepared.write = () => runCatalogWrite({ conn, lh: lh!, q, parser, scalar, rewrite, query }, inner);
      }
      return prepared;
    } catch (err) {
      read.release();
      throw err;
    }
  } catch (err) {
    if (err instanceof StatementRefusal || err instanceof TreeTooLarge) throw new QueryFailure('refused', err.message);
    if (err instanceof SqlSyntaxError) throw new QueryFailure('failed', err.message.replace(/\s*\n\s*/g, ' ').slice(0, 2000));
    throw err;
  }
}

/** The parse trees whose table references read data (a part's tree; UPDATE and DELETE run their own text). */
function treesOf(s: Statement): Node[] {
  const inner = explained(s);
  switch (inner.kind) {
    case 'select': return [inner.tree];
    case 'insert': case 'create_table_as': case 'create_view': return [inner.query.tree];
    case 'update': case 'delete': return [inner.check];
    default: return [];
  }
}

function readsMetadata(trees: Node[]): boolean {
  let found = false;
  walk(trees, (n) => {
    if (found) return;
    if (n.type === 'SHOW_REF') found = true;
    else if (n.type === 'BASE_TABLE' && (n.schema_name === 'information_schema' || n.schema_name === 'pg_catalog' || n.catalog_name === 'system')) found = true;
    else if (n.type === 'TABLE_FUNCTION' && METADATA_FUNCTIONS.has(String((n.function as Node)?.function_name ?? '').toLowerCase())) found = true;
  });
  return found;
}

/** A name reads and changes only the workspace's own database, or its catalog (`iceberg.<namespace>.<table>`, writes in lakehouse/write.ts). */
function checkName(t: QName, own: string, how: 'read' | 'write'): void {
  // DuckDB reads `a.b` as schema a, or else as catalog a: `temp.t` is a temporary table.
  const catalog = t.catalog ?? (t.schema !== undefined && OTHER_CATALOGS.has(t.schema) ? t.schema : undefined);
  if (catalog === undefined || catalog === own) return;
  // Reading DuckDB's own catalogs (information_schema, pg_catalog, duckdb_*) is reading metadata.
  if (how === 'read' && (catalog === 'system' || catalog === 'temp')) return;
  if (catalog === CATALOG) {
    if (t.catalog === undefined) throw new QueryFailure('refused', `name catalog tables iceberg.<namespace>.<table>: "${t.schema}.${t.name}" names no namespace`);
    return;
  }
  throw new QueryFailure('refused', `the embedded engine reads and changes only the workspace's own database, not "${catalog}"`);
}
const OTHER_CATALOGS = new Set(['temp', 'system', CATALOG]);

/** A constant expression's value, as a snapshot id or as epoch milliseconds, run on the connection. */
async function evaluate(conn: DuckDBConnection, parser: SqlParser, expr: Node, as: 'bigint' | 'epoch_ms'): Promise<string> {
  const template = await parser.parse(as === 'bigint' ? 'SELECT CAST(NULL AS BIGINT)' : 'SELECT epoch_ms(CAST(NULL AS TIMESTAMP WITH TIME ZONE))');
  if (!template.ok) throw new Error('the time-travel template did not parse');
  const stmt = fillNullSlot(template.statements[0]!, expr);
  try {
    const rows = (await conn.runAndReadAll(await parser.print(stmt))).getRows();
    const v = rows[0]?.[0];
    if (v === null || v === undefined) throw new QueryFailure('failed', 'the point of time travel is NULL');
    return String(v);
  } catch (err) {
    if (err instanceof QueryFailure) throw err;
    throw new QueryFailure('failed', `the point of time travel: ${(err as Error).message.replace(/\s*\n\s*/g, ' ').slice(0, 500)}`);
  }
}
