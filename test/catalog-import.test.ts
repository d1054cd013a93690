// Issue 25 point 3's import: tables Spark, the Java API and Athena wrote (their files name another
// bucket) become tables of a workspace. Each fixture is imported into a real S3 server (s3rver);
// its copy lies inside the workspace's warehouse with every path rewritten, plans at every
// snapshot the files and deletes the scope rules give (derived independently from the copy's own
// files), and reads the same rows as the original (hyparquet, position deletes rewritten and still
// applying). The command line does the same; what cannot be imported leaves nothing behind.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { S3Client, GetObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { startCatalogApp, workspace, rolePeople, type CatalogApp } from './helpers/catalog.js';
import { expectedRows, expectedScan } from './helpers/iceberg-expect.js';
import { FIXTURES, FIXTURE_TABLES, fixtureReader } from './helpers/iceberg-memory.js';
import { runSvc, serviceEnv } from './helpers/cli.js';
import { importTable } from '../src/catalog/import.js';
import { planTable } from '../src/catalog/scan.js';
import { systemCaller } from '../src/catalog/access.js';
import { findWarehouse } from '../src/catalog/warehouse.js';
import { parseJson } from '../src/catalog/json.js';

let c: CatalogApp;
let s3: S3Client;
let editor: string;

async function http(method: string, p: string, body?: unknown) {
  const res = await fetch(new URL(p, c.base), { method, headers: { authorization: `Bearer ${editor}`, ...(body ? { 'content-type': 'application/json' } : {}) }, body: body ? JSON.stringify(body) : undefined });
  const text = await res.text();
  return { status: res.status, text, body: text ? parseJson(text) as any : null };
}
const s3Read = async (location: string) => {
  const out = await s3.send(new GetObjectCommand({ Bucket: 'warehouse', Key: location.replace(/^s3:\/\/warehouse\//, '') }));
  return out.Body!.transformToByteArray();
};
async function keys(prefix: string): Promise<string[]> {
  const out = await s3.send(new ListObjectsV2Command({ Bucket: 'warehouse', Prefix: prefix }));
  return (out.Contents ?? []).map((o) => o.Key!);
}
const original = async (dir: string, file: string) => parseJson(await readFile(`${FIXTURES}/${dir}/metadata/${file}`, 'utf8')) as any;

before(async () => {
  c = await startCatalogApp();
  s3 = new S3Client({ endpoint: c.s3.endpoint, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: c.s3.accessKey, secretAccessKey: c.s3.secretKey } });
  await workspace(c.t, 'sales');
  editor = (await rolePeople(c.t, 'sales')).editor;
  assert.equal((await http('POST', 'v1/sales/namespaces', { namespace: ['lake'] })).status, 200);
});
after(async () => { s3.destroy(); await c.close(); });

describe('importing the fixtures', () => {
  for (const [dir, file] of FIXTURE_TABLES) {
    const name = dir.replace('/', '_');
    test(`${dir}: the copy lies in the warehouse, plans as the scope rules say and reads the original's rows`, async () => {
      const s = c.t.services;
      const wh = await findWarehouse(s, 'sales');
      const r = await importTable(s, wh, systemCaller(s), ['lake'], name, `${FIXTURES}/${dir}`);
      assert.match(r.location, /^s3:\/\/warehouse\/lake\/sales\/[0-9a-f-]{36}\/[0-9a-f-]{36}$/);
      const loaded = await http('GET', `v1/sales/namespaces/lake/tables/${name}`);
      assert.equal(loaded.status, 200, loaded.text);
      const meta = loaded.body.metadata;
      const orig = await original(dir, file);
      assert.equal(meta.location, r.location);
      assert.notEqual(meta['table-uuid'], orig['table-uuid'], 'the copy is a new table');
      assert.equal(loaded.body['metadata-location'], r.metadataLocation);
      const stored = await keys(r.location.replace('s3://warehouse/', ''));
      assert.equal(stored.length, r.files);
      assert.ok(!loaded.text.includes('hyperparam-iceberg'), 'no path names the old bucket');
      const prefix = (p: string) => p.replace(/^s3a?:\/\/hyperparam-iceberg\/[^/]+\/[^/]+/, r.location);
      for (const snap of orig.snapshots) {
        const sid = String(snap['snapshot-id']);
        const plan = await planTable(s, wh, meta, { snapshotId: sid });
        const got = plan.tasks.map((t) => ({ path: t.file.path, deletes: t.deletes.map((i) => plan.deleteFiles[i].file.path).sort() })).sort((a, b) => a.path.localeCompare(b.path));
        const fromCopy = (await expectedScan(meta, sid, s3Read)).map((f) => ({ path: f.path, deletes: f.deletes }));
        const fromOriginal = (await expectedScan(orig, sid, fixtureReader(`${FIXTURES}/${dir}`))).map((f) => ({ path: prefix(f.path), deletes: f.deletes.map(prefix) }));
        assert.deepEqual(got, fromCopy, `snapshot ${sid}: planned as the copy's own files say`);
        assert.deepEqual(fromCopy, fromOriginal, `snapshot ${sid}: the same files as the original`);
      }
      const rows = await expectedRows(meta, String(meta['current-snapshot-id']), s3Read);
      const want = await expectedRows(orig, String(orig['current-snapshot-id']), fixtureReader(`${FIXTURES}/${dir}`));
      assert.deepEqual(rows, want);
      assert.ok(rows.length > 0);
    });
  }

  test('java/bunnies: the position delete file was rewritten to name the copied data file', async () => {
    const meta = (await http('GET', 'v1/sales/namespaces/lake/tables/java_bunnies')).body.metadata;
    const plan = await planTable(c.t.services, await findWarehouse(c.t.services, 'sales'), meta, {});
    const initial = plan.tasks.find((t) => t.file.path.endsWith('bunnies-initial.parquet'))!;
    const pos = initial.deletes.map((i) => plan.deleteFiles[i]).find((d) => d.file.content === 1)!;
    const { parquetRowsById } = await import('./helpers/iceberg-expect.js');
    const rows = await parquetRowsById(await s3Read(pos.file.path));
    assert.equal(rows.length, 6);
    for (const r of rows) assert.equal(r.get(2147483546), initial.file.path);
    assert.equal(Buffer.from(pos.file.lowerBounds!.get(2147483546)!).toString(), initial.file.path, 'the truncated bounds became the exact range');
    assert.equal(Buffer.from(pos.file.upperBounds!.get(2147483546)!).toString(), initial.file.path);
  });
});

describe('what cannot be imported', () => {
  test('an unknown namespace, a folder that is no table, a file outside the table location: refused, nothing left', async () => {
    const s = c.t.services;
    const wh = await findWarehouse(s, 'sales');
    await assert.rejects(importTable(s, wh, systemCaller(s), ['nope'], 't', `${FIXTURES}/athena/example`), /Namespace does not exist: nope/);
    await assert.rejects(importTable(s, wh, systemCaller(s), ['lake'], 't', FIXTURES), /has no metadata folder/);
    const tmp = await mkdtemp(path.join(tmpdir(), 'svc-import-test-'));
    try {
      await cp(`${FIXTURES}/java/bunnies`, tmp, { recursive: true });
      const f = path.join(tmp, 'metadata', 'v5.metadata.json');
      await writeFile(f, (await readFile(f, 'utf8')).replace('"location" : "s3a://hyperparam-iceberg/java/bunnies"', '"location" : "s3a://hyperparam-iceberg/java/other"'));
      const before = (await keys('lake/sales/')).length;
      await assert.rejects(importTable(s, wh, systemCaller(s), ['lake'], 'moved', tmp), /outside its location s3a:\/\/hyperparam-iceberg\/java\/other/);
      assert.equal((await keys('lake/sales/')).length, before, 'the copied objects were removed');
      assert.equal((await http('GET', 'v1/sales/namespaces/lake/tables/moved')).status, 404);
    } finally {
      await rm(tmp, { recursive: true, force: true });
    }
  });

  test('svc catalog import: the command line imports and registers; a failure is one line and exit 1', async () => {
    const env = serviceEnv(c.t.db.url, c.s3, { SVC_CATALOG__WAREHOUSE: 's3://warehouse/lake', SVC_LOG__FILTER: 'error' });
    const ok = await runSvc(['catalog', 'import', '--workspace', 'sales', '--namespace', 'lake', '--table', 'athena_cli', `${FIXTURES}/athena/example`], { env });
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(ok.stdout, /^imported: lake\.athena_cli in workspace sales\nmetadata: s3:\/\/warehouse\/lake\/sales\/[0-9a-f-]{36}\/[0-9a-f-]{36}\/metadata\/00000-[0-9a-f-]{36}\.metadata\.json\nfiles: 4 \(\d+ bytes\)\n$/);
    const loaded = await http('GET', 'v1/sales/namespaces/lake/tables/athena_cli');
    assert.equal(loaded.status, 200);
    const bad = await runSvc(['catalog', 'import', '--workspace', 'sales', '--namespace', 'lake', '--table', 'athena_cli', `${FIXTURES}/athena/example`], { env });
    assert.equal(bad.code, 1);
    assert.equal(bad.stderr.trim().split('\n').length, 1, bad.stderr);
    assert.match(bad.stderr, /already exists: lake\.athena_cli/);
  });
});
