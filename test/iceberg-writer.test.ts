// The snapshot writer of the format core (src/iceberg/writer.ts), without services: appends,
// position deletes and copy-on-write removals produce manifests that an independent Avro decoder
// (avsc's own BlockDecoder, test/helpers/iceberg-expect.ts) reads as the specification lays them
// out, snapshots whose summaries and sequence numbers follow it, and plans that apply the deletes
// by the sequence-number rules. A removal or delete of a file a concurrent commit removed is a
// conflict; format v1 and v3 tables get what their version allows.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { planScan } from '../src/iceberg/planner.js';
import { prepareCommit } from '../src/iceberg/writer.js';
import { IcebergConflictError } from '../src/iceberg/errors.js';
import { decodeAvro } from './helpers/iceberg-expect.js';
import { MemTable } from './helpers/iceberg-memory.js';

const schema = { type: 'struct', 'schema-id': 0, fields: [
  { id: 1, name: 'id', type: 'long', required: true }, { id: 2, name: 'region', type: 'string', required: false },
  { id: 3, name: 'day', type: 'date', required: false }, { id: 4, name: 'price', type: 'decimal(9,2)', required: false },
] };
const spec = { 'spec-id': 0, fields: [{ 'source-id': 2, 'field-id': 1000, name: 'region', transform: 'identity' }, { 'source-id': 3, 'field-id': 1001, name: 'day_month', transform: 'month' }] };

function newTable(format = 2, partitioned = true) {
  return MemTable.create({ name: 't', schema, ...(partitioned ? { 'partition-spec': spec } : {}), properties: { 'format-version': String(format) } });
}
const file = (t: MemTable, name: string, region: string, rows = 10, extra: Record<string, unknown> = {}) => ({
  path: `${t.metadata.location}/data/${name}.parquet`, sizeBytes: 100 * rows, recordCount: rows,
  partition: { region, day_month: 648 }, lowerBounds: { 1: 1n, 3: '2024-01-01', 4: '1.50' }, upperBounds: { 1: BigInt(rows), 3: '2024-01-31', 4: '99.99' },
  valueCounts: { 1: rows }, nullValueCounts: { 1: 0 }, ...extra,
});
const plan = (t: MemTable, opts = {}) => planScan(t.metadata, opts, t.io());
const tasks = async (t: MemTable, opts = {}) => {
  const p = await plan(t, opts);
  return Object.fromEntries(p.tasks.map((x) => [x.file.path.split('/').pop(), x.deletes.map((i) => p.deleteFiles[i].file.path.split('/').pop())]));
};

describe('appends', () => {
  test('a manifest and a manifest list in the specification\'s Avro schemas, read back independently', async () => {
    const t = newTable();
    await t.commit({ dataFiles: [file(t, 'a', 'eu'), file(t, 'b', 'us', 5)] });
    const snap = t.metadata.snapshots[0] as Record<string, any>;
    assert.equal(Number(snap['sequence-number']), 1);
    assert.deepEqual({ ...snap.summary }, {
      operation: 'append', 'added-data-files': '2', 'added-records': '15', 'added-files-size': '1500', 'changed-partition-count': '2',
      'total-records': '15', 'total-files-size': '1500', 'total-data-files': '2', 'total-delete-files': '0', 'total-position-deletes': '0', 'total-equality-deletes': '0',
    });
    const list = await decodeAvro(t.files.get(snap['manifest-list'])!);
    assert.equal(list.meta['format-version'], '2');
    assert.equal(list.meta['snapshot-id'], String(snap['snapshot-id']));
    assert.equal(list.meta['parent-snapshot-id'], 'null');
    assert.equal(list.meta['sequence-number'], '1');
    assert.deepEqual(list.schema.fields.map((f: any) => f['field-id']), [500, 501, 502, 517, 515, 516, 503, 504, 505, 506, 512, 513, 514, 507, 519]);
    assert.equal(list.records.length, 1);
    const m = list.records[0];
    assert.equal(m.content, 0);
    assert.equal(m.sequence_number, 1n);
    assert.equal(m.added_files_count, 2);
    assert.equal(m.added_rows_count, 15n);
    assert.equal(m.partitions[0].lower_bound.toString(), 'eu');
    assert.equal(m.partitions[0].upper_bound.toString(), 'us');
    assert.equal(m.partitions[1].lower_bound.readInt32LE(0), 648);
    const man = await decodeAvro(t.files.get(m.manifest_path)!);
    assert.equal(man.meta.content, 'data');
    assert.equal(man.meta['partition-spec-id'], '0');
    assert.deepEqual(JSON.parse(man.meta['partition-spec']), [{ name: 'region', transform: 'identity', 'source-id': 2, 'field-id': 1000 }, { name: 'day_month', transform: 'month', 'source-id': 3, 'field-id': 1001 }]);
    assert.deepEqual(JSON.parse(man.meta.schema).fields.map((f: any) => f.name), ['id', 'region', 'day', 'price']);
    const e = man.records[0];
    assert.equal(e.status, 1);
    assert.equal(e.sequence_number, null, 'inherited from the manifest list');
    assert.equal(String(e.snapshot_id), String(snap['snapshot-id']));
    assert.deepEqual({ ...e.data_file.partition }, { region: 'eu', day_month: 648 });
    assert.equal(e.data_file.file_format, 'PARQUET');
    const bound = (a: any[], id: number) => a.find((kv) => kv.key === id).value as Buffer;
    assert.equal(bound(e.data_file.lower_bounds, 1).readBigInt64LE(0), 1n);
    assert.equal(bound(e.data_file.lower_bounds, 3).readInt32LE(0), 19723, '2024-01-01 as days');
    assert.equal(bound(e.data_file.upper_bounds, 4).toString('hex'), '270f', '99.99 as the unscaled 9999, big-endian');
  });

  test('each append carries the earlier manifests forward with their sequence numbers', async () => {
    const t = newTable();
    await t.commit({ dataFiles: [file(t, 'a', 'eu')] });
    await t.commit({ dataFiles: [file(t, 'b', 'eu')] });
    const snap = t.metadata.snapshots[1] as Record<string, any>;
    assert.equal(String(snap['parent-snapshot-id']), String(t.metadata.snapshots[0]['snapshot-id']));
    assert.equal(snap.summary['total-records'], '20');
    const list = await decodeAvro(t.files.get(snap['manifest-list'])!);
    assert.deepEqual(list.records.map((r) => r.sequence_number), [2n, 1n]);
    assert.deepEqual(await tasks(t), { 'a.parquet': [], 'b.parquet': [] });
  });

  test('bad input is refused before anything is written', async () => {
    const t = newTable();
    const io = t.io();
    await assert.rejects(prepareCommit(t.metadata, { dataFiles: [{ ...file(t, 'a', 'eu'), path: 's3://elsewhere/x.parquet' }] }, io), /does not lie inside the table location/);
    await assert.rejects(prepareCommit(t.metadata, { dataFiles: [{ ...file(t, 'a', 'eu'), partition: { region: 'eu' } }] }, io), /no value for partition field day_month/);
    await assert.rejects(prepareCommit(t.metadata, { dataFiles: [file(t, 'a', 'eu', 1, { lowerBounds: { 9: 1 } })] }, io), /field id 9, which is not a primitive column/);
    await assert.rejects(prepareCommit(t.metadata, { dataFiles: [file(t, 'a', 'eu', 1, { lowerBounds: { 4: '1.234' } })] }, io), /more digits after the point than the scale 2/);
    await assert.rejects(prepareCommit(t.metadata, {}, io), /needs files to add, delete or remove/);
    assert.equal(t.files.size, 0);
  });
});

describe('deletes', () => {
  test('a position delete applies to the files it names, of its sequence number or older, in its partition', async () => {
    const t = newTable();
    await t.commit({ dataFiles: [file(t, 'a', 'eu'), file(t, 'b', 'eu'), file(t, 'c', 'us')] });
    await t.commit({ positionDeletes: [{ path: `${t.metadata.location}/data/del-a.parquet`, sizeBytes: 50, recordCount: 2, partition: { region: 'eu', day_month: 648 }, dataFiles: [`${t.metadata.location}/data/a.parquet`] }] });
    await t.commit({ dataFiles: [file(t, 'd', 'eu')] });
    assert.deepEqual(await tasks(t), { 'a.parquet': ['del-a.parquet'], 'b.parquet': [], 'c.parquet': [], 'd.parquet': [] });
    const del = t.metadata.snapshots[1] as Record<string, any>;
    assert.equal(del.summary.operation, 'delete');
    assert.equal(del.summary['added-position-deletes'], '2');
    assert.equal(del.summary['total-position-deletes'], '2');
    const list = await decodeAvro(t.files.get(del['manifest-list'])!);
    const deleteManifest = list.records.find((r) => r.content === 1);
    const man = await decodeAvro(t.files.get(deleteManifest.manifest_path)!);
    assert.equal(man.meta.content, 'deletes');
    assert.equal(man.records[0].data_file.content, 1);
    assert.equal(man.records[0].data_file.referenced_data_file, `${t.metadata.location}/data/a.parquet`);
    assert.deepEqual(await tasks(t, { snapshotId: t.metadata.snapshots[0]['snapshot-id'] }), { 'a.parquet': [], 'b.parquet': [], 'c.parquet': [] });
  });

  test('copy-on-write: a removed file leaves the plan; older snapshots still read it', async () => {
    const t = newTable();
    await t.commit({ dataFiles: [file(t, 'a', 'eu'), file(t, 'b', 'eu', 7)] });
    await t.commit({ removeDataFiles: [`${t.metadata.location}/data/a.parquet`], dataFiles: [file(t, 'a2', 'eu', 8)] });
    assert.deepEqual(Object.keys(await tasks(t)).sort(), ['a2.parquet', 'b.parquet']);
    assert.deepEqual(Object.keys(await tasks(t, { snapshotId: t.metadata.snapshots[0]['snapshot-id'] })).sort(), ['a.parquet', 'b.parquet']);
    const snap = t.metadata.snapshots[1] as Record<string, any>;
    assert.equal(snap.summary.operation, 'overwrite');
    assert.equal(snap.summary['deleted-data-files'], '1');
    assert.equal(snap.summary['total-records'], '15');
    const list = await decodeAvro(t.files.get(snap['manifest-list'])!);
    assert.equal(list.records.length, 2, 'the new data manifest and the rewritten one; the old one is not carried');
    const rewritten = await decodeAvro(t.files.get(list.records[1].manifest_path)!);
    assert.deepEqual(rewritten.records.map((r) => [r.status, r.sequence_number]), [[2, 1n], [0, 1n]], 'DELETED and EXISTING, sequence numbers explicit');
  });

  test('removing or deleting from a file a concurrent commit removed is a conflict; an append re-applies', async () => {
    const t = newTable();
    await t.commit({ dataFiles: [file(t, 'a', 'eu'), file(t, 'b', 'eu')] });
    const stale = t.metadata;
    await t.commit({ removeDataFiles: [`${t.metadata.location}/data/a.parquet`] });
    const gone = `${t.metadata.location}/data/a.parquet`;
    await assert.rejects(prepareCommit(t.metadata, { removeDataFiles: [gone] }, t.io()), (e: unknown) => e instanceof IcebergConflictError && /no longer in the table/.test(e.message));
    await assert.rejects(prepareCommit(t.metadata, { positionDeletes: [{ path: `${t.metadata.location}/data/d.parquet`, sizeBytes: 1, recordCount: 1, partition: { region: 'eu', day_month: 648 }, dataFiles: [gone] }] }, t.io()), IcebergConflictError);
    const late = await prepareCommit(stale, { dataFiles: [file(t, 'c', 'eu')] }, t.io());
    assert.throws(() => t.apply(late.requirements, late.updates), /main has changed/);
    await t.commit({ dataFiles: [file(t, 'c', 'eu')] });
    assert.deepEqual(Object.keys(await tasks(t)).sort(), ['b.parquet', 'c.parquet']);
  });
});

describe('format versions', () => {
  test('v1: appends write the v1 schemas (no sequence numbers); row-level deletes are refused', async () => {
    const t = newTable(1, false);
    await t.commit({ dataFiles: [{ path: `${t.metadata.location}/data/a.parquet`, sizeBytes: 10, recordCount: 3 }] });
    const snap = t.metadata.snapshots[0] as Record<string, any>;
    assert.equal(snap['sequence-number'], undefined);
    const list = await decodeAvro(t.files.get(snap['manifest-list'])!);
    assert.ok(!list.schema.fields.some((f: any) => f.name === 'content' || f.name === 'sequence_number'));
    const man = await decodeAvro(t.files.get(list.records[0].manifest_path)!);
    assert.equal(man.records[0].data_file.block_size_in_bytes, 64n * 1024n * 1024n);
    assert.deepEqual(await tasks(t), { 'a.parquet': [] });
    await assert.rejects(prepareCommit(t.metadata, { positionDeletes: [{ path: `${t.metadata.location}/data/d.parquet`, sizeBytes: 1, recordCount: 1, dataFiles: [`${t.metadata.location}/data/a.parquet`] }] }, t.io()), /format v1 tables have no row-level deletes/);
  });

  test('v3: row ids are assigned through the manifest list and inherited by the files', async () => {
    const t = newTable(3, false);
    await t.commit({ dataFiles: [{ path: `${t.metadata.location}/data/a.parquet`, sizeBytes: 10, recordCount: 3 }, { path: `${t.metadata.location}/data/b.parquet`, sizeBytes: 10, recordCount: 4 }] });
    await t.commit({ dataFiles: [{ path: `${t.metadata.location}/data/c.parquet`, sizeBytes: 10, recordCount: 5 }] });
    assert.equal(Number(t.metadata['next-row-id']), 12);
    const p = await plan(t);
    assert.deepEqual(Object.fromEntries(p.tasks.map((x) => [x.file.path.split('/').pop(), Number(x.firstRowId)])), { 'c.parquet': 7, 'a.parquet': 0, 'b.parquet': 3 });
    await assert.rejects(prepareCommit(t.metadata, { positionDeletes: [{ path: `${t.metadata.location}/data/d.parquet`, sizeBytes: 1, recordCount: 1, dataFiles: [`${t.metadata.location}/data/a.parquet`] }] }, t.io()), /deletion vectors/);
  });

  test('an incremental scan reads what appends added after the start snapshot, up to the end', async () => {
    const t = newTable();
    for (const n of ['a', 'b', 'c']) await t.commit({ dataFiles: [file(t, n, 'eu')] });
    const ids = t.metadata.snapshots.map((s) => s['snapshot-id']);
    assert.deepEqual(Object.keys(await tasks(t, { incremental: { start: ids[0], end: ids[2] } })).sort(), ['b.parquet', 'c.parquet']);
    assert.deepEqual(Object.keys(await tasks(t, { incremental: { start: ids[1], end: ids[1] } })), []);
    await assert.rejects(tasks(t, { incremental: { start: ids[2], end: ids[0] } }), /is not an ancestor of snapshot/);
  });
});
