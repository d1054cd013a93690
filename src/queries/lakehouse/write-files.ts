// The data files of a write (docs/engines.md "Writes from SQL"): DuckDB's own Parquet writer
// writes the rows of a materialized relation with each column's Iceberg field id (COPY ...
// FIELD_IDS), split by the table's partition spec (transforms computed in SQL, files grouped by a
// partition number so no value is ever read back from a folder name) and, unpartitioned, into
// files of at most 256 MiB. Each file's statistics (record, value and null counts, lower and upper
// bounds of the columns whose order Iceberg and DuckDB agree on) come from SQL over the file.
import { mkdir, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import type { Field, IcebergType, PrimitiveType, Schema } from '../../iceberg/types.js';
import type { PartitionField, PartitionSpec } from '../../iceberg/specs.js';
import type { NewDataFile } from '../../iceberg/writer.js';
import { quoteIdent } from '../sql/lexer.js';
import { QueryFailure } from '../types.js';

/** Partitions one statement may write (Trino's writers stop at 100 per writer by default). */
export const MAX_PARTITIONS = 1000;
const FILE_BYTES = 256 * 1024 * 1024;
/** A string bound longer than this is left out (bounds are optional; a long one bloats manifests). */
const MAX_STRING_BOUND = 128;
/**
 * Bytes of the partition values of one statement (as text), all partitions together: they are read
 * into this process, written into the SQL that splits the files and into every manifest entry, so
 * identity partitions of long strings are refused beyond it rather than held whatever their size.
 */
export const MAX_PARTITION_VALUE_BYTES = 1024 * 1024;

export interface WrittenFile extends Omit<NewDataFile, 'path'> { local: string }

const lit = (s: string) => `'${s.replace(/'/g, "''")}'`;
const q = quoteIdent;

/** FIELD_IDS for COPY: every field, nested ones with their children's ids. */
function fieldIds(fields: Field[]): string {
  const one = (t: IcebergType, id: number): string => {
    switch (t.type) {
      case 'struct': return `{__duckdb_field_id: ${id}, ${t.fields.map((f) => `${q(f.name)}: ${one(f.type, f.id)}`).join(', ')}}`;
      case 'list': return `{__duckdb_field_id: ${id}, element: ${one(t.element, t.elementId)}}`;
      case 'map': return `{__duckdb_field_id: ${id}, key: ${one(t.key, t.keyId)}, value: ${one(t.value, t.valueId)}}`;
      default: return String(id);
    }
  };
  return `{${fields.map((f) => `${q(f.name)}: ${one(f.type, f.id)}`).join(', ')}}`;
}

/** An expression giving a column's value in the form the format core takes (days, micros, decimal text), or null when svc keeps no bound for the type. */
function valueSql(col: string, t: PrimitiveType): string | null {
  switch (t.type) {
    case 'boolean': case 'int': case 'long': case 'string': return col;
    case 'date': return `CAST(${col} - DATE '1970-01-01' AS INTEGER)`;
    case 'timestamp': case 'timestamptz': return `epoch_us(${col})`;
    case 'decimal': case 'uuid': return `CAST(${col} AS VARCHAR)`;
    default: return null;
  }
}

/** A partition field's value in SQL, as the Iceberg transform gives it. */
function transformSql(pf: PartitionField, source: Field): string {
  const c = q(source.name);
  const t = source.type as PrimitiveType;
  const temporal = t.type === 'date' ? c : t.type === 'timestamp' || t.type === 'timestamptz' ? `make_timestamp(epoch_us(${c}))` : null;
  const no = (why: string) => new QueryFailure('refused', `partition field ${pf.name} (${pf.transform.text} of ${source.name}): ${why}`);
  switch (pf.transform.kind) {
    case 'identity': {
      const v = valueSql(c, t);
      if (v === null) throw no(`identity partitions of type ${t.type} are not written from SQL on the embedded engine`);
      return v;
    }
    case 'year': if (temporal) return `year(${temporal}) - 1970`; break;
    case 'month': if (temporal) return `(year(${temporal}) - 1970) * 12 + month(${temporal}) - 1`; break;
    case 'day':
      if (t.type === 'date') return `CAST(${c} - DATE '1970-01-01' AS INTEGER)`;
      if (temporal) return `CAST(floor(epoch_us(${c}) / 86400000000) AS INTEGER)`;
      break;
    case 'hour': if (t.type === 'timestamp' || t.type === 'timestamptz') return `CAST(floor(epoch_us(${c}) / 3600000000) AS INTEGER)`; break;
    case 'truncate': {
      const w = pf.transform.n!;
      if (t.type === 'int' || t.type === 'long') return `${c} - (((${c} % ${w}) + ${w}) % ${w})`;
      if (t.type === 'string') return `left(${c}, ${w})`;
      throw no(`truncate of ${t.type} is not written from SQL on the embedded engine (integers and strings only)`);
    }
    case 'void': return 'NULL';
    case 'bucket': throw no('bucket partitions are not written from SQL on the embedded engine (DuckDB has no Iceberg bucket hash): write them with Trino or Spark');
    default: break;
  }
  throw no(`the transform does not apply to type ${t.type}`);
}

export interface WriteInput {
  conn: DuckDBConnection;
  /** A temporary table whose columns are the table schema's top-level fields, by name and type. */
  relation: string;
  schema: Schema;
  spec: PartitionSpec;
  /** An empty folder the workspace's database may write. */
  dir: string;
}

/** Writes the relation's rows as Parquet files under `dir`; each with its partition values and statistics. */
export async function writeDataFiles(w: WriteInput): Promise<WrittenFile[]> {
  const fields = w.schema.struct.fields;
  const cols = fields.map((f) => q(f.name)).join(', ');
  const options = `FORMAT parquet, COMPRESSION zstd, FIELD_IDS ${fieldIds(fields)}`;
  const out = path.join(w.dir, 'data');
  await mkdir(w.dir, { recursive: true, mode: 0o700 });
  let partitions = new Map<number, Record<string, unknown>>();
  let pk: string | undefined;
  if (w.spec.fields.length === 0) {
    await w.conn.run(`COPY (SELECT ${cols} FROM ${w.relation}) TO ${lit(out)} (${options}, FILE_SIZE_BYTES ${FILE_BYTES}, FILENAME_PATTERN 'part-{i}')`);
  } else {
    const exprs = w.spec.fields.map((pf) => {
      const source = fields.find((f) => f.id === pf.sourceId);
      if (!source) throw new QueryFailure('refused', `partition field ${pf.name} reads a column the table no longer has`);
      return transformSql(pf, source);
    });
    // the partition columns svc adds take names no column of the table has
    const taken = new Set(fields.map((f) => f.name.toLowerCase()));
    const free = (base: string) => { let n = base; while (taken.has(n)) n += '_'; taken.add(n); return n; };
    const PK = free('__svc_pk');
    pk = PK;
    const P = exprs.map((_, i) => free(`__svc_p${i}`));
    const keyed = `${w.relation}_p`;
    await w.conn.run(`CREATE TEMP TABLE ${keyed} AS SELECT *, ${exprs.map((e, i) => `${e} AS ${P[i]}`).join(', ')} FROM ${w.relation}`);
    try {
      const ps = P.join(', ');
      const size = exprs.map((_, i) => `coalesce(strlen(CAST(${P[i]} AS VARCHAR)), 0)`).join(' + ');
      const bytes = Number((await w.conn.runAndReadAll(`SELECT coalesce(sum(${size}), 0) FROM (SELECT DISTINCT ${ps} FROM ${keyed} LIMIT ${MAX_PARTITIONS + 1})`)).getRowsJS()[0]![0]);
      if (bytes > MAX_PARTITION_VALUE_BYTES) throw new QueryFailure('refused', `the statement's partition values take ${bytes} bytes, more than ${MAX_PARTITION_VALUE_BYTES}: partition by shorter values (truncate, a day) or write fewer partitions at once`);
      const tuples = (await w.conn.runAndReadAll(`SELECT DISTINCT ${ps} FROM ${keyed} LIMIT ${MAX_PARTITIONS + 1}`)).getRowsJS();
      if (tuples.length > MAX_PARTITIONS) throw new QueryFailure('refused', `the statement writes more than ${MAX_PARTITIONS} partitions: write it in parts`);
      partitions = new Map(tuples.map((t, k) => [k + 1, Object.fromEntries(w.spec.fields.map((pf, i) => [pf.name, t[i] ?? null]))]));
      const numbered = tuples.map((t, k) => `SELECT ${t.map((v, i) => `${sqlValue(v)} AS ${P[i]}`).join(', ')}, ${k + 1} AS ${PK}`).join(' UNION ALL ');
      const on = exprs.map((_, i) => `r.${P[i]} IS NOT DISTINCT FROM k.${P[i]}`).join(' AND ');
      await w.conn.run(`COPY (SELECT ${fields.map((f) => `r.${q(f.name)}`).join(', ')}, k.${PK} FROM ${keyed} AS r JOIN (${numbered}) AS k ON ${on}) TO ${lit(out)} (${options}, PARTITION_BY (${PK}), FILENAME_PATTERN 'part-{i}')`);
    } finally {
      await w.conn.run(`DROP TABLE IF EXISTS ${keyed}`);
    }
  }
  const files: WrittenFile[] = [];
  for (const rel of (await readdir(out, { recursive: true })).filter((f) => f.endsWith('.parquet')).sort()) {
    const local = path.join(out, rel);
    const key = pk ? new RegExp(`${pk}=(\\d+)`).exec(rel) : null;
    const stats = await statistics(w.conn, local, fields);
    if (stats.recordCount === 0) continue;
    files.push({ local, sizeBytes: (await stat(local)).size, ...stats, ...(key ? { partition: partitions.get(Number(key[1]))! } : {}) });
  }
  return files;
}

function sqlValue(v: unknown): string {
  if (v === null || v === undefined) return 'NULL';
  if (typeof v === 'bigint' || typeof v === 'number') return String(v);
  if (typeof v === 'boolean') return v ? 'TRUE' : 'FALSE';
  return lit(String(v));
}

/** Counts and bounds of one written file, by field id. */
async function statistics(conn: DuckDBConnection, local: string, fields: Field[]) {
  const prim = fields.filter((f) => f.type.type !== 'struct' && f.type.type !== 'list' && f.type.type !== 'map');
  const exprs = ['count(*)'];
  const bounded: Array<{ f: Field; at: number }> = [];
  const counted: number[] = [];
  for (const f of prim) {
    counted.push(exprs.length);
    exprs.push(`count(${q(f.name)})`);
    const v = valueSql(q(f.name), f.type as PrimitiveType);
    if (v === null || (f.type as PrimitiveType).type === 'uuid') continue;
    bounded.push({ f, at: exprs.length });
    // a long string bound is left out in SQL, so a value of any size is never read into this process
    if ((f.type as PrimitiveType).type === 'string') exprs.push(...['min', 'max'].map((m) => `CASE WHEN length(${m}(${v})) <= ${MAX_STRING_BOUND} THEN ${m}(${v}) END`));
    else exprs.push(`min(${v})`, `max(${v})`);
  }
  const row = (await conn.runAndReadAll(`SELECT ${exprs.join(', ')} FROM read_parquet(${lit(local)})`)).getRowsJS()[0]!;
  const n = Number(row[0]);
  const valueCounts: Record<number, number> = {};
  const nullValueCounts: Record<number, number> = {};
  prim.forEach((f, i) => { valueCounts[f.id] = n; nullValueCounts[f.id] = n - Number(row[counted[i]!]); });
  const lowerBounds: Record<number, unknown> = {};
  const upperBounds: Record<number, unknown> = {};
  for (const { f, at } of bounded) {
    const lo = row[at + 0];
    const hi = row[at + 1];
    if (lo === null || hi === null || lo === undefined || hi === undefined) continue;
    lowerBounds[f.id] = lo;
    upperBounds[f.id] = hi;
  }
  return { recordCount: n, valueCounts, nullValueCounts, lowerBounds, upperBounds };
}
