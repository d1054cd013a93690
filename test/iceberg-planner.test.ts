// Scan planning of the format core (src/iceberg/planner.ts), without services:
// - the fixtures written by Spark, the Java API and Athena, at every snapshot, plan the files and
//   deletes the specification's scope rules give (derived independently: test/helpers/iceberg-expect);
// - a table partitioned by day(ts), identity(region), bucket[8](id) and truncate[3](name), written
//   by svc's writer, prunes by manifest summaries, partition values and column bounds, and returns
//   residuals only where a partition does not decide the filter;
// - snapshot selection: ids, refs, and points in time from the snapshot log (Trino's semantics).
import { test, describe, before } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { planScan, type ScanPlan } from '../src/iceberg/planner.js';
import { manifestIO } from '../src/iceberg/cache.js';
import { exprToJson } from '../src/iceberg/expressions.js';
import { applyTransform, parseTransform } from '../src/iceberg/transforms.js';
import { parseJson } from '../src/catalog/json.js';
import { expectedScan } from './helpers/iceberg-expect.js';
import { MemTable, fixtureReader, FIXTURES, FIXTURE_TABLES } from './helpers/iceberg-memory.js';

const fixtures = FIXTURE_TABLES;

const names = (plan: ScanPlan) => plan.tasks.map((t) => ({ path: t.file.path, deletes: t.deletes.map((i) => plan.deleteFiles[i].file.path).sort() })).sort((a, b) => a.path.localeCompare(b.path));

describe('tables other engines wrote', () => {
  for (const [dir, file] of fixtures) {
    test(`${dir}: every snapshot plans the files and deletes the scope rules give`, async () => {
      const root = `${FIXTURES}/${dir}`;
      const meta = parseJson(await readFile(`${root}/metadata/${file}`, 'utf8')) as Record<string, any>;
      const read = fixtureReader(root);
      const io = manifestIO(read);
      for (const s of meta.snapshots) {
        const plan = await planScan(meta, { snapshotId: s['snapshot-id'] }, io);
        const want = (await expectedScan(meta, String(s['snapshot-id']), read)).map((f) => ({ path: f.path, deletes: f.deletes }));
        assert.deepEqual(names(plan), want, `snapshot ${s['snapshot-id']}`);
        assert.equal(String(plan.snapshotId), String(s['snapshot-id']));
      }
      const current = await planScan(meta, {}, io);
      assert.equal(String(current.snapshotId), String(meta['current-snapshot-id']));
      assert.equal(current.schema.schemaId, meta['current-schema-id']);
    });
  }

  test('java/bunnies: the equality delete is global (unpartitioned) and applies only to older data', async () => {
    const root = `${FIXTURES}/java/bunnies`;
    const meta = parseJson(await readFile(`${root}/metadata/v5.metadata.json`, 'utf8')) as Record<string, any>;
    const plan = await planScan(meta, {}, manifestIO(fixtureReader(root)));
    const byName = Object.fromEntries(plan.tasks.map((t) => [t.file.path.split('/').pop(), t]));
    const initial = byName['bunnies-initial.parquet'];
    const updated = byName['bunnies-updated-new-zealand.parquet'];
    assert.deepEqual(initial.deletes.map((i) => plan.deleteFiles[i].file.content).sort(), [1, 2]);
    assert.deepEqual(plan.deleteFiles.find((d) => d.file.content === 2)!.file.equalityIds, [1]);
    assert.equal(updated.deletes.length, 0, 'same sequence number: the equality delete does not apply');
    assert.ok(updated.dataSequenceNumber > initial.dataSequenceNumber);
  });

  test('an unpartitioned table keeps the whole filter as each file\'s residual, and prunes by column bounds', async () => {
    const root = `${FIXTURES}/athena/example`;
    const meta = parseJson(await readFile(`${root}/metadata/${fixtures[2][1]}`, 'utf8')) as Record<string, any>;
    const io = manifestIO(fixtureReader(root));
    const plan = await planScan(meta, { filter: { type: 'gt-eq', term: 'id', value: 2 } }, io);
    assert.equal(plan.tasks.length, 1);
    assert.deepEqual(exprToJson(plan.tasks[0].residual), { type: 'gt-eq', term: 'id', value: 2 });
    const none = await planScan(meta, { filter: { type: 'gt', term: 'id', value: 2 } }, io);
    assert.equal(none.tasks.length, 0, 'ids are 1 and 2 by the file\'s bounds');
    assert.equal(none.skippedFiles, 1);
  });
});

// ---------- a partitioned table written by svc ----------

const schema = {
  type: 'struct', 'schema-id': 0, fields: [
    { id: 1, name: 'id', type: 'long', required: true }, { id: 2, name: 'ts', type: 'timestamptz', required: false },
    { id: 3, name: 'region', type: 'string', required: false }, { id: 4, name: 'amount', type: 'decimal(10,2)', required: false },
    { id: 5, name: 'name', type: 'string', required: false }, { id: 6, name: 'score', type: 'double', required: false },
  ],
};
const spec = { 'spec-id': 0, fields: [
  { 'source-id': 2, 'field-id': 1000, name: 'ts_day', transform: 'day' }, { 'source-id': 3, 'field-id': 1001, name: 'region', transform: 'identity' },
  { 'source-id': 1, 'field-id': 1002, name: 'id_bucket', transform: 'bucket[8]' }, { 'source-id': 5, 'field-id': 1003, name: 'name_trunc', transform: 'truncate[3]' },
] };
const REGIONS = ['eu', 'us', 'ap', 'sa', 'af'];
const DAY0 = Date.UTC(2024, 0, 1);
const micros = (ms: number) => BigInt(ms) * 1000n;
const day = (n: number) => DAY0 / 86_400_000 + n;
const bucketOf = (id: number) => applyTransform(parseTransform('bucket[8]'), { type: 'long' }, BigInt(id)) as number;

let table: MemTable;
let firstAt = 0;
let fifthAt = 0;

/** 50 partitions (5 regions x 10 days), one file each, each appended by its own commit. */
before(async () => {
  table = MemTable.create({ name: 't', schema, 'partition-spec': spec });
  let n = 0;
  for (let d = 0; d < 10; d++) {
    for (const region of REGIONS) {
      const id = n * 100;
      const start = DAY0 + d * 86_400_000;
      await table.commit({ dataFiles: [{
        path: `${table.metadata.location}/data/${region}-${d}.parquet`, sizeBytes: 1000 + n, recordCount: 100,
        partition: { ts_day: day(d), region, id_bucket: bucketOf(id), name_trunc: `${region}x` },
        valueCounts: { 1: 100, 2: 100, 6: 100 }, nullValueCounts: { 1: 0, 2: 0, 6: n % 2 === 0 ? 0 : 3 },
        lowerBounds: { 1: id, 2: micros(start), 4: '10.00', 6: 0.5 }, upperBounds: { 1: id + 99, 2: micros(start + 86_399_000), 4: `${10 + n}.00`, 6: 99.5 },
      }] });
      n++;
      if (n === 1) firstAt = table.now;
      if (n === 5) fifthAt = table.now;
    }
  }
});

const plan = (opts: Parameters<typeof planScan>[1]) => planScan(table.metadata, opts, table.io());
const files = (p: ScanPlan) => p.tasks.map((t) => t.file.path.split('/').pop()!).sort();

describe('pruning a partitioned table', () => {
  test('identity: region = eu plans only eu\'s 10 files; the other 40 manifests are skipped by their summaries', async () => {
    const p = await plan({ filter: { type: 'eq', term: 'region', value: 'eu' } });
    assert.deepEqual(files(p), Array.from({ length: 10 }, (_, d) => `eu-${d}.parquet`).sort());
    assert.equal(p.skippedManifests, 40);
    for (const t of p.tasks) assert.equal(exprToJson(t.residual), true, 'the partition decides region = eu');
    const notEu = await plan({ filter: { type: 'not', child: { type: 'eq', term: 'region', value: 'eu' } } });
    assert.equal(notEu.tasks.length, 40);
    const some = await plan({ filter: { type: 'in', term: 'region', values: ['us', 'af', 'zz'] } });
    assert.equal(some.tasks.length, 20);
  });

  test('day(ts): a time range plans the days it touches; a partition inside the range has no residual', async () => {
    const iso = (ms: number) => new Date(ms).toISOString().replace('Z', '+00:00');
    const f = { type: 'and', left: { type: 'gt-eq', term: 'ts', value: iso(DAY0 + 3 * 86_400_000) }, right: { type: 'lt', term: 'ts', value: iso(DAY0 + 4.5 * 86_400_000) } };
    const p = await plan({ filter: f });
    assert.deepEqual(new Set(files(p).map((x) => x.split('-')[1])), new Set(['3.parquet', '4.parquet']));
    for (const t of p.tasks) {
      const r = exprToJson(t.residual);
      if (t.file.path.endsWith('-3.parquet')) assert.equal(r, true);
      else assert.deepEqual(r, { type: 'lt', term: 'ts', value: '2024-01-05T12:00:00.000000+00:00' });
    }
  });

  test('bucket[8](id): id = N plans the files of bucket(N) only; truncate[3](name) prunes starts-with', async () => {
    const p = await plan({ filter: { type: 'eq', term: 'id', value: 4200 } });
    assert.ok(p.tasks.length >= 1);
    for (const t of p.tasks) assert.equal(t.file.partition[2], bucketOf(4200));
    assert.deepEqual(files(p), ['ap-8.parquet'], 'and the bounds of id keep only the file holding 4200');
    const s = await plan({ filter: { type: 'starts-with', term: 'name', value: 'usx' } });
    assert.equal(s.tasks.length, 10);
    const none = await plan({ filter: { type: 'starts-with', term: 'name', value: 'usy-long' } });
    assert.equal(none.tasks.length, 0);
  });

  test('onFiles hands over each manifest\'s kept files as it is read: exactly the planned files, the pruned ones never, the plan unchanged', async () => {
    const filter = { type: 'gt', term: 'amount', value: '55.00' };
    const batches: string[][] = [];
    const p = await plan({ filter, onFiles: (fs) => batches.push(fs.map((f) => f.path)) });
    assert.deepEqual(batches.flat().sort(), p.tasks.map((t) => t.file.path).sort());
    assert.equal(batches.length, 50 - p.skippedManifests, 'one call per manifest read');
    assert.deepEqual(names(p), names(await plan({ filter })));
    assert.equal(p.skippedFiles, (await plan({ filter })).skippedFiles);
  });

  test('column bounds and null counts prune files that cannot match', async () => {
    const p = await plan({ filter: { type: 'gt', term: 'amount', value: '55.00' } });
    assert.equal(p.tasks.length, 4, 'upper bounds of amount are 10.00 .. 59.00');
    const nulls = await plan({ filter: { type: 'is-null', term: 'score' } });
    assert.equal(nulls.tasks.length, 25, 'half the files count no null score');
    const nan = await plan({ filter: { type: 'is-nan', term: 'score' } });
    assert.equal(nan.tasks.length, 50, 'no NaN counts: nothing to prune');
  });

  test('names match case-insensitively only when asked; select gives the projection', async () => {
    await assert.rejects(plan({ filter: { type: 'eq', term: 'REGION', value: 'eu' } }), /no field named "REGION"/);
    const p = await plan({ filter: { type: 'eq', term: 'REGION', value: 'eu' }, caseSensitive: false, select: ['ID', 'Score'] });
    assert.equal(p.tasks.length, 10);
    assert.deepEqual(p.projection, [1, 6]);
    await assert.rejects(plan({ select: ['nope'] }), /no column named "nope"/);
    await assert.rejects(plan({ filter: { type: 'lt', term: 'region', value: 5 } }), /5 is not a value of type string/);
    await assert.rejects(plan({ filter: { type: 'is-nan', term: 'region' } }), /is-nan needs a float or double field/);
  });

  test('the new form (left/right/child, references, literal objects) plans as the term/value form', async () => {
    const a = await plan({ filter: { type: 'and', left: { type: 'eq', left: { type: 'reference', name: 'region' }, right: { type: 'literal', value: 'us' } }, right: { type: 'gt', left: 500, right: { type: 'reference', name: 'id' } } } });
    assert.deepEqual(files(a), ['us-0.parquet'], 'us, and id < 500 (500 > id)');
  });
});

describe('choosing the snapshot', () => {
  test('a point in time reads the snapshot current then; before the first is an error', async () => {
    const p1 = await plan({ asOfTimestampMs: firstAt });
    assert.equal(p1.tasks.length, 1);
    const p5 = await plan({ asOfTimestampMs: fifthAt + 500 });
    assert.equal(p5.tasks.length, 5);
    await assert.rejects(plan({ asOfTimestampMs: firstAt - 1 }), /No version history of the table at or before/);
    await assert.rejects(plan({ asOfTimestampMs: firstAt, snapshotId: 1 }), /at most one of a ref, a snapshot id and a point in time/);
  });

  test('snapshot ids and refs (tags read with the snapshot\'s schema); unknown ones are refused', async () => {
    const first = table.metadata.snapshots[0]['snapshot-id'];
    assert.equal((await plan({ snapshotId: String(first) })).tasks.length, 1);
    await assert.rejects(plan({ snapshotId: 12345 }), /Cannot find snapshot with ID 12345/);
    await assert.rejects(plan({ ref: 'nope' }), /Cannot find ref "nope"/);
    assert.equal((await plan({ ref: 'main' })).tasks.length, 50);
  });
});
