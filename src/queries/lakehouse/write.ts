// Writes to catalog tables from SQL on the embedded engine (docs/engines.md "Writes from SQL"):
// CREATE TABLE, CREATE TABLE ... AS, INSERT, DELETE and DROP TABLE on `iceberg.<namespace>.<table>`.
// Rows are materialized in a temporary table of the statement's connection, cast to the table's
// columns, written as Parquet with field ids (write-files.ts), put under the table's location and
// committed as one Iceberg snapshot through the catalog's own commit path (catalog-writes.ts),
// whose optimistic concurrency retries an append and refuses a delete that lost its files.
// DELETE is copy-on-write: each data file holding a deleted row is rewritten without it (works on
// format v1 and v2, and readers need no delete files), as Trino does with
// `write.delete.mode=copy-on-write`.
import { randomUUID } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import { planScan, specOf } from '../../iceberg/planner.js';
import { tableInfo } from '../../iceberg/table.js';
import type { Schema } from '../../iceberg/types.js';
import type { NewDataFile } from '../../iceberg/writer.js';
import { decide, type EngineAccess } from '../../policy/decide.js';
import type { EngineResult, EngineRun } from '../types.js';
import { QueryFailure, hasParams, withoutSqlContext } from '../types.js';
import type { Node, SqlParser, ScalarQuery } from '../sql/parser.js';
import { constant, fillNullSlot, replaceNode, subquery } from '../sql/build.js';
import { quoteIdent } from '../sql/lexer.js';
import type { QName, Statement } from '../sql/statement.js';
import { CATALOG, duckType, levelsOf, qualifiedName, schemaOf } from './names.js';
import { icebergType, partitionSpec } from './ddl.js';
import { writeDataFiles } from './write-files.js';
import { queryFilter, readCatalogTables, scanNode, type RewriteContext } from './rewrite.js';
import type { Lakehouse } from './lakehouse.js';
import type { LoadedEntry } from './catalog.js';
import type { PartitionSpec } from '../../iceberg/specs.js';
import type { WriteActor } from './catalog-writes.js';

export interface WriteRun {
  conn: DuckDBConnection;
  lh: Lakehouse;
  q: EngineRun;
  parser: SqlParser;
  scalar: ScalarQuery;
  rewrite: RewriteContext;
  /** The statement's query, printed after its catalog reads were rewritten (INSERT and CTAS). */
  query?: string;
}

interface LoadedTable { levels: string[]; name: string; shown: string; entry: LoadedEntry; location: string; schema: Schema; spec: PartitionSpec }

const refuse = (m: string) => new QueryFailure('refused', m);
const counted = (n: number | bigint): EngineResult => ({ columns: [{ name: 'Count', type: 'BIGINT' }], rows: [[String(n)]], truncated: false });
const done: EngineResult = { columns: [{ name: 'Count', type: 'BIGINT' }], rows: [], truncated: false };

/** Whether a statement writes a catalog table (it then runs here, not as DuckDB SQL). */
export function writesCatalog(s: Exclude<Statement, { kind: 'explain' }>): boolean {
  switch (s.kind) {
    case 'insert': case 'create_table': case 'create_table_as': case 'create_view': case 'update': case 'delete': return isCatalog(s.target);
    case 'ddl': return s.targets.some(isCatalog);
    default: return false;
  }
}
const isCatalog = (n: QName) => n.catalog === CATALOG;

/** Runs a statement that writes catalog tables; its answer is DuckDB's (`Count`). */
export async function runCatalogWrite(w: WriteRun, s: Exclude<Statement, { kind: 'explain' }>): Promise<EngineResult> {
  if (!w.lh.writes) throw refuse('writing catalog tables needs the catalog on this replica');
  const actor: WriteActor = { workspaceId: w.q.workspaceId, user: w.q.user, groups: w.q.groups, role: w.q.role };
  try {
    switch (s.kind) {
      case 'create_table': return await createTable(w, actor, s);
      case 'create_table_as': return await createTableAs(w, actor, s);
      case 'insert': return await insert(w, actor, s);
      case 'delete': return await deleteRows(w, actor, s);
      case 'ddl': return await drop(w, actor, s);
      case 'update': throw refuse('UPDATE of catalog tables is not supported on the embedded engine: DELETE the rows and INSERT them again');
      case 'create_view': throw refuse('catalog views are created through the catalog API (POST .../views), not from SQL on the embedded engine');
      default: throw refuse('this statement does not write catalog tables');
    }
  } catch (err) {
    throw asQueryFailure(err);
  }
}

/** The catalog's errors as the query's: a right or policy refusal is `refused`, the rest `failed`, each with its message. */
function asQueryFailure(err: unknown): unknown {
  if (err instanceof QueryFailure) return err;
  const e = err as { name?: string; status?: number; message?: string; kind?: string };
  if (e?.name === 'IcebergError') return new QueryFailure(e.status === 403 ? 'refused' : 'failed', String(e.message));
  if (e?.name === 'IcebergFormatError' || e?.name === 'IcebergConflictError') return new QueryFailure('failed', String(e.message));
  return err;
}

function nameOf(n: QName) {
  const levels = levelsOf(n.schema ?? '');
  return { levels, name: n.name, shown: qualifiedName(levels, n.name) };
}

async function loadTable(w: WriteRun, n: QName): Promise<LoadedTable> {
  const t = nameOf(n);
  const entry = await w.lh.catalog.load(w.q.workspaceId, t.levels, t.name);
  if (!entry) throw new QueryFailure('failed', `Catalog Error: Table with name ${t.shown} does not exist`);
  if (entry.kind !== 'table') throw refuse(`${t.shown} is a catalog view: a view is not written`);
  const info = tableInfo(entry.metadata);
  return { ...t, entry, location: info.location, schema: info.schemas.get(info.currentSchemaId)!, spec: specOf(info, info.defaultSpecId) };
}

/** Refuses what the workspace's policies deny this subject; with `reads`, also a table the subject sees masked or filtered. */
async function checkPolicies(w: WriteRun, t: LoadedTable, access: EngineAccess, reads: boolean): Promise<void> {
  if (!w.lh.policies) return;
  const { slug } = await w.lh.catalog.tenant(w.q.workspaceId);
  const rules = await w.lh.policies.load(slug);
  const target = { catalog: [CATALOG, slug], schema: schemaOf(t.levels), table: t.name, columns: t.schema.struct.fields.map((f) => f.name) };
  const denied = decide(rules, w.rewrite.subject, target, access).denied;
  if (denied) throw refuse(`policy "${denied.policy}" denies ${denied.access} on ${t.shown}`);
  if (!reads) return;
  const seen = decide(rules, w.rewrite.subject, target, 'select');
  const why = seen.denied?.policy ?? seen.rowFilter?.policy ?? [...seen.masks.values()][0]?.policy ?? [...seen.deniedColumns.values()][0];
  if (why) throw refuse(`policy "${why}" limits what you read of ${t.shown}: ${access.toUpperCase()} reads the stored rows, so it is refused`);
}

/** A folder the workspace's database may write, removed with what is in it at the end. */
async function scratch<T>(w: WriteRun, f: (dir: string, temp: (what: string) => string) => Promise<T>): Promise<T> {
  const id = randomUUID().replace(/-/g, '').slice(0, 16);
  const dir = path.join(w.lh.files.dir(w.q.workspaceId), `write-${id}`);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const temps: string[] = [];
  try {
    return await f(dir, (what) => { const n = `__svc_${what}_${id}`; temps.push(n); return n; });
  } finally {
    for (const t of temps) await w.conn.run(`DROP TABLE IF EXISTS temp.${t}`).catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  }
}

async function columnsOf(conn: DuckDBConnection, relation: string): Promise<Array<{ name: string; type: string; nullable: boolean }>> {
  const rows = (await conn.runAndReadAll(`SELECT column_name, data_type, is_nullable FROM duckdb_columns() WHERE database_name = 'temp' AND table_name = '${relation}' ORDER BY column_index`)).getRows();
  return rows.map((r) => ({ name: String(r[0]), type: String(r[1]), nullable: r[2] === true }));
}

async function runWithParams(w: WriteRun, sql: string): Promise<void> {
  if (hasParams(w.q.params)) await w.conn.run(sql, w.q.params as never);
  else await w.conn.run(sql);
}

// ---------- CREATE TABLE ----------

const CONSTRAINTS = new Set(['default', 'check', 'generated', 'references', 'primary', 'unique', 'collate', 'constraint', 'foreign', 'as']);

async function createTable(w: WriteRun, a: WriteActor, s: Extract<Statement, { kind: 'create_table' }>): Promise<EngineResult> {
  const t = nameOf(s.target);
  if (s.replace) throw refuse(`CREATE OR REPLACE of a catalog table is not supported: DROP TABLE ${t.shown} first`);
  const bad = s.columns.find((k) => k.kind === 'word' && CONSTRAINTS.has(k.value));
  if (bad) throw refuse(`catalog tables take column names, types and NOT NULL only, not ${bad.value.toUpperCase()}`);
  const text = s.text.slice(s.columns[0]!.start, s.columns[s.columns.length - 1]!.end);
  return scratch(w, async (_dir, temp) => {
    const rel = temp('ddl');
    await w.conn.run(`CREATE TEMP TABLE ${rel} (${text})`);
    const cols = await columnsOf(w.conn, rel);
    await create(w, a, t, cols, s.options, s.ifNotExists);
    return done;
  });
}

async function create(w: WriteRun, a: WriteActor, t: { levels: string[]; name: string }, cols: Array<{ name: string; type: string; nullable: boolean }>, options: Extract<Statement, { kind: 'create_table' }>['options'], ifNotExists: boolean): Promise<boolean> {
  const fields = cols.map((c, i) => ({ id: i + 1, name: c.name, required: !c.nullable, type: icebergType(c.type, c.name) }));
  const spec = partitionSpec(options, fields);
  return w.lh.writes!.createTable(a, t.levels, {
    name: t.name, schema: { type: 'struct', 'schema-id': 0, fields },
    ...(spec ? { 'partition-spec': spec } : {}),
  }, ifNotExists);
}

// ---------- CREATE TABLE ... AS and INSERT ----------

async function createTableAs(w: WriteRun, a: WriteActor, s: Extract<Statement, { kind: 'create_table_as' }>): Promise<EngineResult> {
  const t = nameOf(s.target);
  if (s.replace) throw refuse(`CREATE OR REPLACE of a catalog table is not supported: DROP TABLE ${t.shown} first`);
  return scratch(w, async (dir, temp) => {
    const src = temp('src');
    await runWithParams(w, `CREATE TEMP TABLE ${src} AS ${w.query!}`);
    const cols = (await columnsOf(w.conn, src)).map((c) => ({ ...c, nullable: true }));
    if (!(await create(w, a, t, cols, s.options, s.ifNotExists))) return counted(0);
    const table = await loadTable(w, s.target);
    try {
      await w.lh.writes!.mayCommit(a, table.levels, table.name);
      return counted(await append(w, a, table, src, cols.map((c) => c.name), dir, temp));
    } catch (err) {
      // CREATE TABLE ... AS is one statement: a table whose rows could not be written goes again,
      // by whoever could create it (dropping a table otherwise needs ws_admin)
      try {
        await w.lh.writes!.undoCreate(a, t.levels, t.name, table.entry.metadataLocation);
      } catch (undo) {
        const e = asQueryFailure(err);
        const kind = e instanceof QueryFailure ? e.kind : 'failed';
        throw new QueryFailure(kind, `${withoutSqlContext((e as Error).message)} (${t.shown} was created and is left empty: ${(undo as Error).message.slice(0, 300)})`);
      }
      throw err;
    }
  });
}

async function insert(w: WriteRun, a: WriteActor, s: Extract<Statement, { kind: 'insert' }>): Promise<EngineResult> {
  if (s.conflict) throw refuse('INSERT OR REPLACE / IGNORE needs keys, which catalog tables do not have: use INSERT');
  if (s.byName) throw refuse('INSERT ... BY NAME is not supported on catalog tables: name the columns');
  const table = await loadTable(w, s.target);
  await checkPolicies(w, table, 'insert', false);
  // the commit's own right and policies, before any file is put under the table's location
  await w.lh.writes!.mayCommit(a, table.levels, table.name);
  return scratch(w, async (dir, temp) => {
    const src = temp('src');
    await runWithParams(w, `CREATE TEMP TABLE ${src} AS ${w.query!}`);
    const cols = await columnsOf(w.conn, src);
    const names = s.columns ?? table.schema.struct.fields.map((f) => f.name);
    if (cols.length !== names.length) throw new QueryFailure('failed', `Insert query has ${cols.length} columns but ${table.shown} takes ${names.length}${s.columns ? ' (the column list)' : ''}`);
    return counted(await append(w, a, table, src, cols.map((c) => c.name), dir, temp, names));
  });
}

/** Appends the rows of `src` (its columns in the order of `into`, by default the table's) as one commit; the number of rows. */
async function append(w: WriteRun, a: WriteActor, t: LoadedTable, src: string, srcCols: string[], dir: string, temp: (what: string) => string, into?: string[]): Promise<number> {
  const fields = t.schema.struct.fields;
  const targets = into ?? fields.map((f) => f.name);
  const pos = new Map<string, number>();
  targets.forEach((n, i) => {
    const f = fields.find((x) => x.name === n) ?? fields.find((x) => x.name.toLowerCase() === n.toLowerCase());
    if (!f) throw new QueryFailure('failed', `Binder Error: Table ${t.shown} does not have a column with name "${n}"`);
    if (pos.has(f.name)) throw new QueryFailure('failed', `column "${f.name}" is named twice in the INSERT`);
    pos.set(f.name, i);
  });
  const rows = temp('rows');
  const select = fields.map((f) => {
    const i = pos.get(f.name);
    return `CAST(${i === undefined ? 'NULL' : `s.${quoteIdent(srcCols[i]!)}`} AS ${duckType(f.type)}) AS ${quoteIdent(f.name)}`;
  });
  await w.conn.run(`CREATE TEMP TABLE ${rows} AS SELECT ${select.join(', ')} FROM ${src} AS s`);
  for (const f of fields.filter((x) => x.required)) {
    const nulls = (await w.conn.runAndReadAll(`SELECT count(*) FROM ${rows} WHERE ${quoteIdent(f.name)} IS NULL`)).getRowsJS()[0]![0];
    if (Number(nulls) > 0) throw new QueryFailure('failed', `NULL value not allowed for NOT NULL column: ${f.name}`);
  }
  const n = Number((await w.conn.runAndReadAll(`SELECT count(*) FROM ${rows}`)).getRowsJS()[0]![0]);
  if (n === 0) return 0;
  const dataFiles = await upload(w, a, t, await writeDataFiles({ conn: w.conn, relation: rows, schema: t.schema, spec: t.spec, dir }));
  await w.lh.writes!.commit(a, t.levels, t.name, { dataFiles, summary: { 'engine-name': 'svc-embedded' } });
  return n;
}

async function upload(w: WriteRun, a: WriteActor, t: LoadedTable, files: Awaited<ReturnType<typeof writeDataFiles>>): Promise<NewDataFile[]> {
  const out: NewDataFile[] = [];
  const tag = randomUUID();
  for (const [i, f] of files.entries()) {
    const { local, ...rest } = f;
    out.push({ ...rest, path: await w.lh.writes!.upload(a, t.location, `${tag}-${i}.parquet`, local) });
  }
  return out;
}

// ---------- DELETE (copy-on-write) ----------

async function deleteRows(w: WriteRun, a: WriteActor, s: Extract<Statement, { kind: 'delete' }>): Promise<EngineResult> {
  if (s.using) throw refuse('DELETE ... USING is not supported on catalog tables: use WHERE ... IN (SELECT ...)');
  const t = await loadTable(w, s.target);
  await checkPolicies(w, t, 'delete', true);
  await w.lh.writes!.mayCommit(a, t.levels, t.name);
  const isTarget = (n: Node) => n.type === 'BASE_TABLE' && n.catalog_name === CATALOG && n.table_name === t.name && n.schema_name === schemaOf(t.levels);
  const targetIn = (tree: Node): Node => {
    const from = (tree.node as Node).from_table as Node;
    if (!isTarget(from)) throw new Error('the DELETE check does not read its target first');
    return from;
  };
  const filter = queryFilter([s.check], targetIn(s.check), t.name, t.schema, new Set());
  const plan = await planScan(t.entry.metadata, { filter, signal: w.q.signal }, w.lh.manifests(w.q.workspaceId));
  const removed: string[] = [];
  const added: NewDataFile[] = [];
  let deleted = 0;
  await scratch(w, async (dir, temp) => {
    for (const [i, task] of plan.tasks.entries()) {
      const releases: Array<() => void> = [];
      try {
        const matched = Number(await one(w, await fileQuery(w, s.check, targetIn, t, plan, task, releases, 'count')));
        if (matched === 0) continue;
        deleted += matched;
        removed.push(task.file.path);
        const kept = temp(`kept${i}`);
        await runWithParams(w, `CREATE TEMP TABLE ${kept} AS ${await fileQuery(w, s.check, targetIn, t, plan, task, releases, 'keep')}`);
        added.push(...await upload(w, a, t, await writeDataFiles({ conn: w.conn, relation: kept, schema: t.schema, spec: t.spec, dir: path.join(dir, String(i)) })));
        await w.conn.run(`DROP TABLE ${kept}`);
      } finally {
        for (const r of releases) r();
      }
    }
  });
  if (removed.length > 0) await w.lh.writes!.commit(a, t.levels, t.name, { dataFiles: added, removeDataFiles: removed, summary: { 'engine-name': 'svc-embedded' } });
  return counted(deleted);
}

async function one(w: WriteRun, sql: string): Promise<unknown> {
  const reader = hasParams(w.q.params) ? await w.conn.runAndReadAll(sql, w.q.params as never) : await w.conn.runAndReadAll(sql);
  return reader.getRowsJS()[0]![0];
}

/**
 * The DELETE's own check (`SELECT 1 FROM target WHERE (cond)`, as DuckDB parsed it) over one data
 * file: `count` counts the rows it deletes there, `keep` selects the rows that stay (cond not true).
 * Other catalog tables the condition reads are rewritten as any query's, with their policies.
 */
async function fileQuery(w: WriteRun, check: Node, targetIn: (tree: Node) => Node, t: LoadedTable, plan: Awaited<ReturnType<typeof planScan>>, task: Awaited<ReturnType<typeof planScan>>['tasks'][number], releases: Array<() => void>, what: 'count' | 'keep'): Promise<string> {
  const tree = cloneTree(check);
  const ref = targetIn(tree);
  const scan = await scanNode(w.lh, w.rewrite, t.shown, plan, [task], releases);
  replaceNode(ref, subquery({ node: scan }, String(ref.alias || t.name)));
  const others = await readCatalogTables(w.lh, { ...w.rewrite, reads: { n: 0 } }, [tree]);
  releases.push(others.release);
  const select = tree.node as Node;
  if (what === 'count') {
    const outer = await template(w, 'SELECT count(*) FROM (SELECT 1) AS m');
    ((outer.node as Node).from_table as Node).subquery = { node: select, named_param_map: [] };
    return w.parser.print(outer);
  }
  const star = await template(w, 'SELECT *');
  select.select_list = (star.node as Node).select_list;
  if (select.where_clause) {
    const not = fillNullSlot(await template(w, 'SELECT 1 WHERE (NULL) IS NOT TRUE'), select.where_clause as Node);
    select.where_clause = (not.node as Node).where_clause;
  } else {
    select.where_clause = constant(false);
  }
  return w.parser.print(tree);
}

/** A copy of a parse tree to change; the parser's number objects (lossless JSON) are kept as they are. */
function cloneTree<T>(v: T): T {
  if (Array.isArray(v)) return v.map(cloneTree) as T;
  if (v !== null && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, cloneTree(x)])) as T;
  }
  return v;
}

async function template(w: WriteRun, sql: string): Promise<Node> {
  const p = await w.parser.parse(sql);
  if (!p.ok) throw new Error(`a template did not parse: ${sql}`);
  return p.statements[0]!;
}

// ---------- DROP TABLE ----------

async function drop(w: WriteRun, a: WriteActor, s: Extract<Statement, { kind: 'ddl' }>): Promise<EngineResult> {
  if (s.action !== 'drop' || s.object !== 'table') throw refuse(`${s.action.toUpperCase()} ${s.object.toUpperCase()} on the catalog is not supported from SQL on the embedded engine (CREATE TABLE, INSERT, DELETE and DROP TABLE are)`);
  if (!s.targets.every(isCatalog)) throw refuse('DROP TABLE names catalog tables and the workspace\'s own tables together: drop them in two statements');
  const ifExists = s.tokens[2]?.value === 'if';
  for (const target of s.targets) {
    const t = nameOf(target);
    const entry = await w.lh.catalog.load(w.q.workspaceId, t.levels, t.name);
    if (entry?.kind === 'table') await checkPolicies(w, await loadTable(w, target), 'drop', false);
    await w.lh.writes!.dropTable(a, t.levels, t.name, ifExists);
  }
  return done;
}

