// CREATE TABLE on a catalog table (docs/engines.md "Writes from SQL"): the column types DuckDB
// gives become Iceberg types (as DuckDB's own Iceberg writer maps them), and the partitioning is
// read as Spark writes it (`PARTITIONED BY (days(ts), bucket(16, id), region)`) or as Trino does
// (`WITH (partitioning = ARRAY['day(ts)', 'bucket(id, 16)', 'region'])`). Partition fields are
// named as the Iceberg Java API names them (`ts_day`, `id_bucket`, `name_trunc`, the column's
// name for identity).
import type { Token } from '../sql/lexer.js';
import { QueryFailure } from '../types.js';
import type { TableOptions } from '../sql/statement.js';

type Json = Record<string, unknown>;
const refuse = (m: string) => new QueryFailure('refused', m);

/** The Iceberg type (JSON form) of a DuckDB column type, or a refusal naming the column. */
export function icebergType(duck: string, column: string): string {
  const t = duck.trim().toUpperCase();
  const dec = /^DECIMAL\((\d+),\s*(\d+)\)$/.exec(t);
  if (dec) return `decimal(${dec[1]}, ${dec[2]})`;
  const simple: Record<string, string> = {
    BOOLEAN: 'boolean', TINYINT: 'int', SMALLINT: 'int', INTEGER: 'int', UTINYINT: 'int', USMALLINT: 'int', UINTEGER: 'long',
    BIGINT: 'long', FLOAT: 'float', DOUBLE: 'double', DATE: 'date', TIME: 'time', TIMESTAMP: 'timestamp',
    'TIMESTAMP WITH TIME ZONE': 'timestamptz', VARCHAR: 'string', UUID: 'uuid', BLOB: 'binary',
    HUGEINT: 'decimal(38, 0)', UBIGINT: 'decimal(20, 0)', 'TIMESTAMP_S': 'timestamp', 'TIMESTAMP_MS': 'timestamp',
  };
  const hit = simple[t];
  if (!hit) throw refuse(`column ${column}: type ${duck.slice(0, 80)} cannot be written to a catalog table from SQL (primitive types only: boolean, integers, float, double, decimal, date, time, timestamp, timestamp with time zone, varchar, uuid, blob)`);
  return hit;
}

interface PartitionText { transform: string; column: string }

/** The partition spec request of the table's options, naming the schema's fields. */
export function partitionSpec(options: TableOptions, fields: Array<{ id: number; name: string }>): Json | undefined {
  const items: PartitionText[] = [];
  if (options.partitionedBy) items.push(...split(options.partitionedBy).map((part) => sparkItem(part)));
  if (options.with) items.push(...withItems(options.with));
  if (items.length === 0) return undefined;
  let next = 1000;
  const out = items.map((it) => {
    const f = fields.find((x) => x.name === it.column) ?? fields.find((x) => x.name.toLowerCase() === it.column.toLowerCase());
    if (!f) throw refuse(`the partitioning names column ${it.column}, which the table does not have`);
    const kind = it.transform.replace(/\[.*$/, '');
    const suffix = kind === 'identity' ? '' : `_${kind === 'truncate' ? 'trunc' : kind}`;
    return { 'source-id': f.id, 'field-id': next++, name: `${f.name}${suffix}`, transform: it.transform };
  });
  return { 'spec-id': 0, fields: out };
}

/** The tokens of a list, split at the commas outside parentheses. */
function split(toks: Token[]): Token[][] {
  const out: Token[][] = [[]];
  let depth = 0;
  for (const t of toks) {
    if (t.text === '(' || t.text === '[') depth++;
    if (t.text === ')' || t.text === ']') depth--;
    if (depth === 0 && t.text === ',') out.push([]);
    else out[out.length - 1]!.push(t);
  }
  return out.filter((p) => p.length > 0);
}

const SPARK: Record<string, string> = { years: 'year', year: 'year', months: 'month', month: 'month', days: 'day', day: 'day', date: 'day', hours: 'hour', hour: 'hour', date_hour: 'hour', bucket: 'bucket', truncate: 'truncate', identity: 'identity' };

/** `col`, `days(ts)`, `bucket(16, id)` (Spark) or `bucket(id, 16)` (Trino). */
function item(name: string, args: Token[][]): PartitionText {
  const fn = SPARK[name.toLowerCase()];
  if (!fn) throw refuse(`unknown partition transform ${name.slice(0, 40)}: use identity, year, month, day, hour, bucket or truncate`);
  const words = args.filter((a) => a.length === 1 && (a[0]!.kind === 'word' || a[0]!.kind === 'quoted')).map((a) => a[0]!.value);
  const nums = args.filter((a) => a.length === 1 && a[0]!.kind === 'number').map((a) => Number(a[0]!.text));
  if (words.length !== 1) throw refuse(`partition transform ${name}(...) needs one column`);
  if (fn === 'bucket' || fn === 'truncate') {
    if (nums.length !== 1 || !Number.isInteger(nums[0]) || nums[0]! < 1) throw refuse(`partition transform ${fn} needs a positive whole number and a column`);
    return { transform: `${fn}[${nums[0]}]`, column: words[0]! };
  }
  if (nums.length > 0 || args.length !== 1) throw refuse(`partition transform ${name}(...) takes one column`);
  return { transform: fn, column: words[0]! };
}

function sparkItem(part: Token[]): PartitionText {
  if (part.length === 1 && (part[0]!.kind === 'word' || part[0]!.kind === 'quoted')) return { transform: 'identity', column: part[0]!.value };
  if (part.length >= 3 && part[0]!.kind === 'word' && part[1]!.text === '(' && part[part.length - 1]!.text === ')') return item(part[0]!.value, split(part.slice(2, -1)));
  throw refuse(`cannot read the partition item ${part.map((t) => t.text).join(' ').slice(0, 80)}`);
}

/** Trino's `partitioning = ARRAY['col', 'day(ts)']`; other properties are refused by name. */
function withItems(toks: Token[]): PartitionText[] {
  const out: PartitionText[] = [];
  for (const prop of split(toks)) {
    const key = prop[0];
    if (!key || prop[1]?.text !== '=') throw refuse('WITH (...) takes name = value properties');
    if (key.value !== 'partitioning') throw refuse(`table property ${key.value.slice(0, 40)} is not supported on the embedded engine (partitioning only)`);
    const rest = prop.slice(2);
    if (rest[0]?.value !== 'array' || rest[1]?.text !== '[' || rest[rest.length - 1]?.text !== ']') throw refuse("partitioning takes ARRAY['column', 'day(ts)', ...]");
    for (const el of split(rest.slice(2, -1))) {
      if (el.length !== 1 || el[0]!.kind !== 'string') throw refuse("partitioning takes ARRAY['column', 'day(ts)', ...]");
      out.push(fromTrino(el[0]!.value));
    }
  }
  return out;
}

function fromTrino(text: string): PartitionText {
  const s = text.trim();
  const m = /^(\w+)\s*\(\s*(.+?)\s*\)$/.exec(s);
  const col = (c: string) => (/^".*"$/.test(c) ? c.slice(1, -1).replace(/""/g, '"') : c.toLowerCase());
  if (!m) return { transform: 'identity', column: col(s) };
  const args = m[2]!.split(',').map((a) => a.trim());
  const fn = SPARK[m[1]!.toLowerCase()];
  if (!fn) throw refuse(`unknown partition transform ${m[1]!.slice(0, 40)}: use identity, year, month, day, hour, bucket or truncate`);
  if (fn === 'bucket' || fn === 'truncate') {
    const n = Number(args[1]);
    if (args.length !== 2 || !Number.isInteger(n) || n < 1) throw refuse(`partition transform ${fn} is ${fn}(column, n) with a positive whole n`);
    return { transform: `${fn}[${n}]`, column: col(args[0]!) };
  }
  if (args.length !== 1) throw refuse(`partition transform ${fn}(column) takes one column`);
  return { transform: fn, column: col(args[0]!) };
}
