// The SQL that reads one table's planned files (docs/engines.md "The lakehouse"), made by svc from
// the plan and never from user text: every file path is one svc chose in its cache, every name
// quoted. DuckDB's own Parquet reader reads the files by Iceberg field id (read_parquet's
// `schema` map), so renamed, added, dropped and reordered columns read right, and a file written
// before a column existed reads it as NULL. Deletes as the specification applies them:
// - position deletes (file path, row position) anti-join each data row by its file and row number
//   (the cache names a file by the SHA-256 of its location, which DuckDB computes from a delete
//   file's `file_path` too);
// - equality deletes anti-join the rows of the data files they apply to (the planner decides which,
//   by sequence number and partition), comparing with IS NOT DISTINCT FROM (null equals null, as
//   the specification says), so files are read in groups that share the same equality deletes.
import { quoteIdent } from '../sql/lexer.js';
import type { Field, Schema } from '../../iceberg/types.js';
import { DELETE_FILE_PATH_ID, DELETE_POS_ID } from '../../iceberg/deletes.js';
import { unsupported } from '../../iceberg/errors.js';
import { duckType } from './names.js';

export interface ScanFile { local: string }
export interface ScanDelete { local: string; content: 1 | 2; equalityIds?: number[] }
export interface ScanGroupInput {
  schema: Schema;
  /** the files to read, each with the indexes of the deletes that apply to it */
  tasks: Array<{ file: ScanFile; deletes: number[] }>;
  deletes: ScanDelete[];
  /** the workspace's cache folder, where every local file lies */
  cacheDir: string;
}

const FILE = '__svc_file';
const lit = (s: string) => `'${s.replace(/'/g, "''")}'`;
const list = (files: string[]) => `[${files.map(lit).join(', ')}]`;

function schemaMap(fields: Field[]): string {
  return `MAP {${fields.map((f) => `${f.id}: {name: ${lit(f.name)}, type: ${lit(duckType(f.type))}, default_value: NULL}`).join(', ')}}`;
}

/** `SELECT <columns> ...` over the table's files, its columns the schema's top-level fields by name; null when no file is planned. */
export function scanSql(s: ScanGroupInput): string | null {
  const fields = s.schema.struct.fields;
  if (s.tasks.length === 0) return null;
  const groups = new Map<string, { files: string[]; positional: Set<number>; equality: number[] }>();
  for (const t of s.tasks) {
    const equality = t.deletes.filter((i) => s.deletes[i]!.content === 2).sort((a, b) => a - b);
    const k = equality.join(',');
    let g = groups.get(k);
    if (!g) { g = { files: [], positional: new Set(), equality }; groups.set(k, g); }
    g.files.push(t.file.local);
    for (const i of t.deletes) if (s.deletes[i]!.content === 1) g.positional.add(i);
  }
  const cols = fields.map((f) => `d.${quoteIdent(f.name)}`).join(', ');
  const parts = [...groups.values()].map((g) => {
    const positional = [...g.positional].map((i) => s.deletes[i]!.local);
    const from = `read_parquet(${list(g.files)}, schema = ${schemaMap(fields)}${positional.length ? `, filename = ${lit(FILE)}, file_row_number = true` : ''}) AS d`;
    const joins: string[] = [];
    if (positional.length) {
      const dir = s.cacheDir.endsWith('/') ? s.cacheDir : `${s.cacheDir}/`;
      joins.push(`ANTI JOIN (SELECT ${lit(dir)} || sha256(file_path) || '.parquet' AS f, pos FROM read_parquet(${list(positional)}, schema = MAP {${DELETE_FILE_PATH_ID}: {name: 'file_path', type: 'VARCHAR', default_value: NULL}, ${DELETE_POS_ID}: {name: 'pos', type: 'BIGINT', default_value: NULL}})) AS p ON p.f = d.${FILE} AND p.pos = d.file_row_number`);
    }
    g.equality.forEach((i, n) => {
      const del = s.deletes[i]!;
      const eq = (del.equalityIds ?? []).map((id) => {
        const f = fields.find((x) => x.id === id);
        if (!f) throw unsupported(`an equality delete file compares field ${id}, which the schema read no longer has`);
        return f;
      });
      if (eq.length === 0) throw unsupported('an equality delete file names no equality field ids');
      const on = eq.map((f) => `e${n}.${quoteIdent(f.name)} IS NOT DISTINCT FROM d.${quoteIdent(f.name)}`).join(' AND ');
      joins.push(`ANTI JOIN (SELECT ${eq.map((f) => quoteIdent(f.name)).join(', ')} FROM read_parquet(${list([del.local])}, schema = ${schemaMap(eq)})) AS e${n} ON ${on}`);
    });
    return `SELECT ${cols} FROM ${from}${joins.length ? ` ${joins.join(' ')}` : ''}`;
  });
  return parts.join(' UNION ALL ');
}

/** The same columns with no rows: a table with no snapshot, or a scan that planned no file. */
export function emptySql(schema: Schema): string {
  return `SELECT ${schema.struct.fields.map((f) => `CAST(NULL AS ${duckType(f.type)}) AS ${quoteIdent(f.name)}`).join(', ')} WHERE false`;
}
