// The Avro schemas of manifests and manifest lists as the Iceberg specification defines them
// (sections "Manifests", "Manifest Lists"), with their field ids, for format versions 1 to 3, in
// the field order and record names the Java reference writes (V1Metadata, V2Metadata,
// V3Metadata). The partition struct follows the spec's partition type (Appendix A's Avro types).
import type { PrimitiveType } from './types.js';
import type { PartitionSpec } from './specs.js';

type AvroSchema = unknown;
const opt = (t: AvroSchema) => ['null', t];
const f = (id: number, name: string, type: AvroSchema, optional = false, doc?: string) => ({
  name, type: optional ? opt(type) : type, ...(doc ? { doc } : {}), ...(optional ? { default: null } : {}), 'field-id': id,
});
const intLongMap = (id: number, name: string, k: number, v: number, valueType: AvroSchema, doc: string) =>
  f(id, name, { type: 'array', items: { type: 'record', name: `k${k}_v${v}`, fields: [f(k, 'key', 'int'), f(v, 'value', valueType)] }, logicalType: 'map' }, true, doc);

/** Minimum bytes of a two's-complement decimal of precision `p` (spec Appendix A). */
export function decimalBytes(p: number): number {
  let n = 1;
  while (2 ** (8 * n - 1) < 10 ** p) n++;
  return n;
}

/** Avro schema of an Iceberg primitive (Appendix A); named types get unique names per file. */
export function avroPrimitive(t: PrimitiveType, named: Set<string>): AvroSchema {
  const once = (name: string, schema: Record<string, unknown>) => {
    if (named.has(name)) return name;
    named.add(name);
    return { ...schema, name };
  };
  switch (t.type) {
    case 'boolean': case 'int': case 'long': case 'float': case 'double': case 'string': return t.type;
    case 'binary': return 'bytes';
    case 'date': return { type: 'int', logicalType: 'date' };
    case 'time': return { type: 'long', logicalType: 'time-micros' };
    case 'timestamp': return { type: 'long', logicalType: 'timestamp-micros', 'adjust-to-utc': false };
    case 'timestamptz': return { type: 'long', logicalType: 'timestamp-micros', 'adjust-to-utc': true };
    case 'timestamp_ns': return { type: 'long', logicalType: 'timestamp-nanos', 'adjust-to-utc': false };
    case 'timestamptz_ns': return { type: 'long', logicalType: 'timestamp-nanos', 'adjust-to-utc': true };
    case 'uuid': return once('uuid_fixed', { type: 'fixed', size: 16, logicalType: 'uuid' });
    case 'fixed': return once(`fixed_${t.length}`, { type: 'fixed', size: t.length });
    case 'decimal': return once(`decimal_${t.precision}_${t.scale}`, { type: 'fixed', size: decimalBytes(t.precision!), logicalType: 'decimal', precision: t.precision, scale: t.scale });
    default: return 'bytes';
  }
}

/** An Avro name from a partition field name, as Java's AvroSchemaUtil.makeCompatibleName does. */
export function avroName(name: string): string {
  let out = '';
  for (let i = 0; i < name.length; i++) {
    const ch = name[i];
    const ok = /[A-Za-z_]/.test(ch) || (i > 0 && /[0-9]/.test(ch));
    out += ok ? ch : /[0-9]/.test(ch) ? `_${ch}` : `_x${ch.charCodeAt(0).toString(16).toUpperCase()}`;
  }
  return out || '_';
}

export function partitionRecord(spec: PartitionSpec): AvroSchema {
  const named = new Set<string>();
  return { type: 'record', name: 'r102', fields: spec.fields.map((p) => f(p.fieldId, avroName(p.name), avroPrimitive(p.resultType, named), true)) };
}

/** manifest_entry for a manifest of `spec` in a table of `formatVersion`. */
export function manifestEntrySchema(formatVersion: number, spec: PartitionSpec): AvroSchema {
  const v = formatVersion;
  const file = [
    ...(v >= 2 ? [f(134, 'content', 'int', false, 'Contents of the file: 0=data, 1=position deletes, 2=equality deletes')] : []),
    f(100, 'file_path', 'string', false, 'Location URI with FS scheme'),
    f(101, 'file_format', 'string', false, 'File format name: avro, orc, or parquet'),
    f(102, 'partition', partitionRecord(spec), false, 'Partition data tuple, schema based on the partition spec'),
    f(103, 'record_count', 'long', false, 'Number of records in the file'),
    f(104, 'file_size_in_bytes', 'long', false, 'Total file size in bytes'),
    ...(v === 1 ? [f(105, 'block_size_in_bytes', 'long')] : []),
    intLongMap(108, 'column_sizes', 117, 118, 'long', 'Map of column id to total size on disk'),
    intLongMap(109, 'value_counts', 119, 120, 'long', 'Map of column id to total count, including null and NaN'),
    intLongMap(110, 'null_value_counts', 121, 122, 'long', 'Map of column id to null value count'),
    intLongMap(137, 'nan_value_counts', 138, 139, 'long', 'Map of column id to number of NaN values in the column'),
    intLongMap(125, 'lower_bounds', 126, 127, 'bytes', 'Map of column id to lower bound'),
    intLongMap(128, 'upper_bounds', 129, 130, 'bytes', 'Map of column id to upper bound'),
    f(131, 'key_metadata', 'bytes', true, 'Encryption key metadata blob'),
    f(132, 'split_offsets', { type: 'array', items: 'long', 'element-id': 133 }, true, 'Splittable offsets'),
    ...(v >= 2 ? [f(135, 'equality_ids', { type: 'array', items: 'int', 'element-id': 136 }, true, 'Equality comparison field IDs')] : []),
    f(140, 'sort_order_id', 'int', true, 'Sort order ID'),
    ...(v >= 3 ? [f(142, 'first_row_id', 'long', true, 'The first row ID assigned to the first row in the data file')] : []),
    ...(v >= 2 ? [f(143, 'referenced_data_file', 'string', true, 'Fully qualified location (URI with FS scheme) of a data file that all deletes reference')] : []),
    ...(v >= 3 ? [f(144, 'content_offset', 'long', true, 'The offset in the file where the content starts'), f(145, 'content_size_in_bytes', 'long', true, 'The length of referenced content stored in the file')] : []),
  ];
  return {
    type: 'record', name: 'manifest_entry',
    fields: [
      f(0, 'status', 'int'),
      f(1, 'snapshot_id', 'long', v >= 2),
      ...(v >= 2 ? [f(3, 'sequence_number', 'long', true), f(4, 'file_sequence_number', 'long', true)] : []),
      f(2, 'data_file', { type: 'record', name: 'r2', fields: file }),
    ],
  };
}

/** manifest_file, the record of a manifest list, for a table of `formatVersion`. */
export function manifestFileSchema(formatVersion: number): AvroSchema {
  const v = formatVersion;
  const summary = f(507, 'partitions', {
    type: 'array', 'element-id': 508,
    items: {
      type: 'record', name: 'r508',
      fields: [
        f(509, 'contains_null', 'boolean', false, 'True if any file has a null partition value'),
        f(518, 'contains_nan', 'boolean', true, 'True if any file has a nan partition value'),
        f(510, 'lower_bound', 'bytes', true, 'Partition lower bound for all files'),
        f(511, 'upper_bound', 'bytes', true, 'Partition upper bound for all files'),
      ],
    },
  }, true, 'Summary for each partition');
  const counts = (required: boolean) => [
    f(504, 'added_files_count', 'int', !required, 'Added entry count'),
    f(505, 'existing_files_count', 'int', !required, 'Existing entry count'),
    f(506, 'deleted_files_count', 'int', !required, 'Deleted entry count'),
  ];
  const rows = (required: boolean) => [
    f(512, 'added_rows_count', 'long', !required, 'Added rows count'),
    f(513, 'existing_rows_count', 'long', !required, 'Existing rows count'),
    f(514, 'deleted_rows_count', 'long', !required, 'Deleted rows count'),
  ];
  const head = [
    f(500, 'manifest_path', 'string', false, 'Location URI with FS scheme'),
    f(501, 'manifest_length', 'long', false, 'Total file size in bytes'),
    f(502, 'partition_spec_id', 'int', false, 'Spec ID used to write'),
  ];
  const fields = v === 1
    ? [...head, f(503, 'added_snapshot_id', 'long', false, 'Snapshot ID that added the manifest'), ...counts(false), summary, ...rows(false), f(519, 'key_metadata', 'bytes', true, 'Encryption key metadata blob')]
    : [
      ...head,
      f(517, 'content', 'int', false, 'Contents of the manifest: 0=data, 1=deletes'),
      f(515, 'sequence_number', 'long', false, 'Sequence number when the manifest was added'),
      f(516, 'min_sequence_number', 'long', false, 'Lowest sequence number in the manifest'),
      f(503, 'added_snapshot_id', 'long', false, 'Snapshot ID that added the manifest'),
      ...counts(true), ...rows(true), summary,
      f(519, 'key_metadata', 'bytes', true, 'Encryption key metadata blob'),
      ...(v >= 3 ? [f(520, 'first_row_id', 'long', true, 'Starting row ID to assign to new rows in ADDED data files')] : []),
    ];
  return { type: 'record', name: 'manifest_file', fields };
}
