// Writes from SQL to catalog tables on the embedded engine (issue 25, point 4): CREATE TABLE (with
// Spark's PARTITIONED BY or Trino's WITH (partitioning = ...)), CREATE TABLE ... AS, INSERT,
// DELETE (copy-on-write) and DROP TABLE, each one Iceberg commit through the catalog. What svc
// wrote is read back by iceberg-js (the table's metadata, every answer checked against the REST
// specification by the test catalog) and by an independent reader (avsc for manifests, hyparquet
// for Parquet, deletes applied by the specification's rules: test/helpers/iceberg-expect.ts).
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { S3Client, GetObjectCommand } from '@aws-sdk/client-s3';
import { IcebergRestCatalog } from 'iceberg-js';
import { startCatalogApp, workspace, rolePeople, type CatalogApp } from './helpers/catalog.js';
import { decodeAvro, expectedRows, parquetRowsById } from './helpers/iceberg-expect.js';
import { createPolicy } from '../src/policy/policies.js';
import { CLI_ACTOR } from '../src/access/actor.js';
import { runQuery } from '../src/queries/run.js';
import { QueryFailure, type QueryRole } from '../src/queries/types.js';

let c: CatalogApp;
let s3: S3Client;
let wsId: string;
let ice: IcebergRestCatalog;
let editorToken: string;
const as = (name: string, role: QueryRole, groups: string[] = []) => (sql: string, params?: unknown[]) => runQuery(c.t.services.queryEngines, c.t.services.config, {
  workspace: wsId, engine: 'embedded', sql, principal: { name, role, groups }, ...(params ? { params: params as never } : {}),
});
const admin = as('owner@example.com', 'ws_admin');
const editor = as('ed@example.com', 'ws_editor');
const viewer = as('vi@example.com', 'ws_viewer');
const s3Read = async (location: string) => {
  const out = await s3.send(new GetObjectCommand({ Bucket: 'warehouse', Key: location.replace(/^s3:\/\/warehouse\//, '') }));
  return out.Body!.transformToByteArray();
};
const failure = async (p: Promise<unknown>, kind: 'refused' | 'failed') => {
  try { await p; } catch (err) { assert.ok(err instanceof QueryFailure, String(err)); assert.equal(err.kind, kind, err.message); return err.message; }
  assert.fail('the statement ran');
};
/** The table as iceberg-js loads it, and its rows as the independent reader reads them. */
async function independent(name: string) {
  const meta = await ice.loadTable({ namespace: ['lake'], name }) as any;
  const snap = meta['current-snapshot-id'];
  return { meta, rows: snap === undefined || snap === null || String(snap) === '-1' ? [] : await expectedRows(meta, String(snap), s3Read) };
}
const plain = (v: unknown) => (typeof v === 'bigint' ? Number(v) : v);

before(async () => {
  c = await startCatalogApp({ SVC_ENGINES__PROVISIONER: 'none', SVC_POLICY_SERVICE__ENABLED: 'true', SVC_POLICY_SERVICE__AUTH_TOKEN: 'policy-token-abcdefghijklmnop' });
  s3 = new S3Client({ endpoint: c.s3.endpoint, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: c.s3.accessKey, secretAccessKey: c.s3.secretKey } });
  wsId = await workspace(c.t, 'sales');
  const people = await rolePeople(c.t, 'sales');
  editorToken = people.editor;
  ice = new IcebergRestCatalog({ baseUrl: c.base, catalogName: 'sales', auth: { type: 'bearer', token: people.editor } });
  await ice.createNamespace({ namespace: ['lake'] });
});
after(async () => { s3.destroy(); await c.close(); });

describe('writing catalog tables from SQL', () => {
  test('CREATE TABLE with Trino\'s partitioning, INSERT VALUES and INSERT SELECT: one commit each, read back by iceberg-js and an independent reader', async () => {
    await editor(`CREATE TABLE iceberg.lake.events (id BIGINT NOT NULL, name VARCHAR, ts TIMESTAMP, amount DECIMAL(10, 2), day DATE)
      WITH (partitioning = ARRAY['day(ts)', 'name'])`);
    const created = (await independent('events')).meta;
    assert.deepEqual(created.schemas[0].fields.map((f: any) => [f.name, f.type, f.required]),
      [['id', 'long', true], ['name', 'string', false], ['ts', 'timestamp', false], ['amount', 'decimal(10, 2)', false], ['day', 'date', false]]);
    assert.deepEqual(created['partition-specs'].find((s: any) => s['spec-id'] === created['default-spec-id']).fields.map((f: any) => [f.name, f.transform]), [['ts_day', 'day'], ['name', 'identity']]);

    const n = await editor(`INSERT INTO iceberg.lake.events VALUES
      (1, 'a', TIMESTAMP '2024-01-01 10:00:00', 1.50, DATE '2024-01-01'),
      (2, 'b', TIMESTAMP '2024-01-01 11:00:00', 2.25, DATE '2024-01-01'),
      (3, 'a', TIMESTAMP '2024-01-02 09:30:00.123456', NULL, NULL)`);
    assert.deepEqual(n.rows, [['3']]);
    await editor('INSERT INTO iceberg.lake.events (id, name) SELECT range + 10, \'c\' FROM range(2)');

    const { meta, rows } = await independent('events');
    assert.equal(meta.snapshots.length, 2, 'one snapshot per statement');
    assert.deepEqual(rows.map((r) => [plain(r.id), r.name]).sort((x, y) => Number(x[0]) - Number(y[0])), [[1, 'a'], [2, 'b'], [3, 'a'], [10, 'c'], [11, 'c']]);
    const viaSql = await viewer('SELECT id, name, CAST(ts AS VARCHAR), CAST(amount AS VARCHAR), CAST(day AS VARCHAR) FROM iceberg.lake.events ORDER BY id');
    assert.deepEqual(viaSql.rows, [
      ['1', 'a', '2024-01-01 10:00:00', '1.50', '2024-01-01'], ['2', 'b', '2024-01-01 11:00:00', '2.25', '2024-01-01'],
      ['3', 'a', '2024-01-02 09:30:00.123456', null, null], ['10', 'c', null, null, null], ['11', 'c', null, null, null],
    ]);
    // the same instant through the independent reader
    const ts = rows.find((r) => plain(r.id) === 3)!.ts;
    if (ts instanceof Date) assert.equal(ts.toISOString(), '2024-01-02T09:30:00.123Z');
    else assert.equal(String(ts), String(Date.UTC(2024, 0, 2, 9, 30, 0, 123) * 1000 + 456));

    const snapshot = meta.snapshots.find((s: any) => String(s['snapshot-id']) === String(meta['current-snapshot-id']));
    assert.equal(snapshot.summary['engine-name'], 'svc-embedded');
    assert.equal(snapshot.summary['total-records'], '5');
    // each data file's partition values (avsc reading the manifests) are those of every row in it (hyparquet)
    const files: any[] = [];
    for (const m of (await decodeAvro(await s3Read(snapshot['manifest-list']))).records) {
      for (const e of (await decodeAvro(await s3Read(m.manifest_path))).records) files.push(e.data_file);
    }
    assert.equal(files.length, 4, 'one file per (day, name): (2024-01-01, a), (2024-01-01, b), (2024-01-02, a), (null, c)');
    for (const f of files) {
      for (const row of await parquetRowsById(await s3Read(f.file_path))) {
        const t = row.get(3);
        const micros = t === null || t === undefined ? null : t instanceof Date ? BigInt(t.getTime()) * 1000n : BigInt(t as bigint);
        assert.equal(f.partition.ts_day ?? null, micros === null ? null : Number(micros / 86_400_000_000n));
        assert.equal(f.partition.name ?? null, row.get(2) ?? null);
      }
      assert.equal(Number(f.record_count), (await parquetRowsById(await s3Read(f.file_path))).length);
    }
  });

  test('CREATE TABLE AS with Spark\'s PARTITIONED BY, and a file per partition with that partition\'s rows', async () => {
    const r = await editor('CREATE TABLE iceberg.lake.squares PARTITIONED BY (bucket_key) AS SELECT range AS n, range * range AS sq, range % 3 AS bucket_key FROM range(30)');
    assert.deepEqual(r.rows, [['30']]);
    const { meta, rows } = await independent('squares');
    assert.equal(rows.length, 30);
    assert.ok(rows.every((x) => Number(x.sq) === Number(x.n) ** 2));
    const list = await s3Read(meta.snapshots[0]['manifest-list']);
    assert.ok(list.length > 0);
    assert.deepEqual((await viewer('SELECT count(*), sum(sq) FROM iceberg.lake.squares WHERE bucket_key = 1')).rows, [['10', String([...Array(30).keys()].filter((i) => i % 3 === 1).reduce((a, i) => a + i * i, 0))]]);
    await failure(editor('CREATE TABLE iceberg.lake.squares AS SELECT 1 AS x'), 'failed');
    assert.deepEqual((await editor('CREATE TABLE IF NOT EXISTS iceberg.lake.squares AS SELECT 1 AS x')).rows, [['0']]);
  });

  test('DELETE rewrites only the files holding deleted rows; time travel still reads the rows before', async () => {
    await editor('CREATE TABLE iceberg.lake.d (k INTEGER, v VARCHAR)');
    await editor("INSERT INTO iceberg.lake.d VALUES (1, 'x'), (2, 'y')");
    await editor("INSERT INTO iceberg.lake.d VALUES (3, 'z'), (4, 'w')");
    // the id as the catalog wrote it (a 64-bit id: a JavaScript number would round it)
    const load = await (await fetch(new URL('v1/sales/namespaces/lake/tables/d', c.base), { headers: { authorization: `Bearer ${editorToken}` } })).text();
    const first = /"current-snapshot-id"\s*:\s*(\d+)/.exec(load)![1];
    const gone = await editor('DELETE FROM iceberg.lake.d WHERE k IN (SELECT 2) OR v = $1', ['nothing']);
    assert.deepEqual(gone.rows, [['1']]);
    const after = await independent('d');
    assert.deepEqual(after.rows.map((r) => r.k).sort(), [1, 3, 4]);
    const snap = after.meta.snapshots.find((s: any) => String(s['snapshot-id']) === String(after.meta['current-snapshot-id']));
    assert.equal(snap.summary.operation, 'overwrite');
    assert.equal(snap.summary['deleted-data-files'], '1', 'the file with (3, 4) is untouched');
    assert.deepEqual((await viewer(`SELECT k FROM iceberg.lake.d FOR VERSION AS OF ${first} ORDER BY k`)).rows, [[1], [2], [3], [4]]);
    assert.deepEqual((await editor('DELETE FROM iceberg.lake.d WHERE k > 100')).rows, [['0']]);
    assert.deepEqual((await editor('DELETE FROM iceberg.lake.d')).rows, [['3']]);
    assert.deepEqual((await independent('d')).rows, []);
    assert.deepEqual((await viewer('SELECT count(*) FROM iceberg.lake.d')).rows, [['0']]);
  });

  test('concurrent INSERTs are all kept: the commit is retried on the newer metadata, nothing lost or doubled', async () => {
    await editor('CREATE TABLE iceberg.lake.c (k INTEGER)');
    await Promise.all([0, 1, 2, 3].map((i) => editor(`INSERT INTO iceberg.lake.c SELECT ${i} * 100 + range FROM range(10)`)));
    const { meta, rows } = await independent('c');
    assert.equal(meta.snapshots.length, 4);
    assert.deepEqual(rows.map((r) => r.k).sort((a, b) => a - b), [0, 1, 2, 3].flatMap((i) => [...Array(10).keys()].map((j) => i * 100 + j)));
  });

  test('roles, constraints and bad input: a viewer writes nothing, DROP is ws_admin\'s, a NOT NULL column refuses NULL, each with a message', async () => {
    assert.match(await failure(viewer('INSERT INTO iceberg.lake.d VALUES (9, \'v\')'), 'refused'), /ws_viewer may only run SELECT/);
    assert.match(await failure(viewer('CREATE TABLE iceberg.lake.v (x INTEGER)'), 'refused'), /ws_viewer/);
    assert.match(await failure(editor('INSERT INTO iceberg.lake.events (name) VALUES (\'no id\')'), 'failed'), /NULL value not allowed for NOT NULL column: id/);
    assert.match(await failure(editor('INSERT INTO iceberg.lake.events VALUES (1)'), 'failed'), /Insert query has 1 columns but iceberg\."lake"\."events" takes 5/);
    assert.match(await failure(editor('CREATE TABLE iceberg.lake.k (x INTEGER DEFAULT 1)'), 'refused'), /not DEFAULT/);
    // a bucket-partitioned table is a valid table (Trino or Spark write it), but DuckDB has no Iceberg bucket hash
    await editor('CREATE TABLE iceberg.lake.b (x INTEGER) PARTITIONED BY (bucket(4, x))');
    assert.equal((await independent('b')).meta['partition-specs'][0].fields[0].transform, 'bucket[4]');
    assert.match(await failure(editor('INSERT INTO iceberg.lake.b VALUES (1)'), 'refused'), /bucket partitions are not written/);
    assert.deepEqual((await independent('b')).rows, []);
    assert.match(await failure(editor('UPDATE iceberg.lake.d SET v = \'q\''), 'refused'), /UPDATE of catalog tables/);
    assert.match(await failure(editor('DROP TABLE iceberg.lake.c'), 'refused'), /ws_admin|Forbidden/);
    assert.equal((await independent('c')).rows.length, 40, 'the refused drop left the table');
    await admin('DROP TABLE iceberg.lake.c');
    await assert.rejects(ice.loadTable({ namespace: ['lake'], name: 'c' }));
    await admin('DROP TABLE IF EXISTS iceberg.lake.c');
    assert.match(await failure(viewer('SELECT * FROM iceberg.lake.c'), 'failed'), /does not exist/);
    const refusedEvents = (await independent('events')).rows.length;
    assert.equal(refusedEvents, 5, 'no failed statement committed anything');
  });

  test('policies: a deny on insert refuses it, and a DELETE by someone who reads the table masked or filtered is refused', async () => {
    const policy = (input: Parameters<typeof createPolicy>[3]) => createPolicy(c.t.services.db, CLI_ACTOR, 'sales', input, new Date());
    await policy({ name: 'no writers', resources: { catalog: ['iceberg'], schema: ['lake'], table: ['events'] }, deny: [{ users: ['ed@example.com'], accesses: ['insert'] }] });
    await policy({ name: 'a only', resources: { catalog: ['iceberg'], schema: ['lake'], table: ['squares'] }, row_filters: [{ users: ['ed@example.com'], filter: 'n < 5' }] });
    assert.match(await failure(editor('INSERT INTO iceberg.lake.events (id) VALUES (99)'), 'refused'), /policy "no writers" denies insert/);
    assert.match(await failure(editor('DELETE FROM iceberg.lake.squares WHERE n > 20'), 'refused'), /policy "a only"/);
    assert.equal((await independent('squares')).rows.length, 30);
  });
});

