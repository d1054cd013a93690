// Drop with purgeRequested=true against the real server, BullMQ on the real Redis and a real S3
// server (s3rver): the purge job removes the table's data and metadata files, a plain drop leaves
// them, a live table nested in the dropped one's location keeps its files, and the job, keyed by
// the table id, runs once. The job acts as catalog.system_user (set here to a non-default name).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { IcebergRestCatalog } from 'iceberg-js';
import type { Worker } from 'bullmq';
import { startCatalogApp, workspace, rolePeople, type CatalogApp } from './helpers/catalog.js';
import { startCatalogPurgeWorker, enqueuePurge } from '../src/catalog/purge.js';
import { QUEUES } from '../src/queue/queues.js';
import { systemCaller, requireRight } from '../src/catalog/access.js';

let c: CatalogApp;
let own: IcebergRestCatalog;
let worker: Worker;
let ownerToken = '';
const schema = { type: 'struct' as const, 'schema-id': 0, fields: [{ id: 1, name: 'id', type: 'long', required: true }] };

const key = (uri: string) => uri.replace(/^s3:\/\/warehouse\//, '');
const keys = async (location: string) => (await c.t.services.s3.list(`${key(location)}/`)).map((o) => o.key).sort();
const exists = async (uri: string) => (await c.t.services.s3.head(key(uri))) !== null;

before(async () => {
  c = await startCatalogApp({ SVC_CATALOG__SYSTEM_USER: 'lake-system' });
  await workspace(c.t, 'sales');
  const tokens = await rolePeople(c.t, 'sales');
  ownerToken = tokens.owner;
  own = new IcebergRestCatalog({ baseUrl: c.base, catalogName: 'sales', auth: { type: 'bearer', token: tokens.owner } });
  await own.createNamespace({ namespace: ['web'] });
});
after(async () => { await worker?.close(); await c.close(); });

/** A table with a snapshot whose manifest list lies outside its location, and data files. */
async function tableWithFiles(name: string) {
  const created = await own.createTable({ namespace: ['web'] }, { name, schema });
  const loc = created.location;
  const outside = `s3://warehouse/lake/sales/shared/${name}-snap-1.avro`;
  for (const f of [`${loc}/data/part-0.parquet`, `${loc}/data/part-1.parquet`, outside]) await c.t.services.s3.put(key(f), 'bytes');
  const res = await fetch(new URL(`v1/sales/namespaces/web/tables/${name}`, c.base), {
    method: 'POST', headers: { authorization: `Bearer ${ownerToken}`, 'content-type': 'application/json' },
    body: `{"requirements":[],"updates":[{"action":"add-snapshot","snapshot":{"snapshot-id":1,"sequence-number":1,"timestamp-ms":1780000000000,"manifest-list":"${outside}","summary":{"operation":"append"},"schema-id":0}},{"action":"set-snapshot-ref","ref-name":"main","type":"branch","snapshot-id":1}]}`,
  });
  assert.equal(res.status, 200, await res.text());
  return { loc, outside };
}

async function waitFor(what: string, check: () => Promise<boolean>) {
  for (let i = 0; i < 600; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.fail(`timed out waiting for ${what}`);
}

test('purgeRequested=true removes data and metadata through the purge job; a plain drop leaves them', async () => {
  worker = startCatalogPurgeWorker(c.t.services);
  const kept = await tableWithFiles('kept');
  const gone = await tableWithFiles('gone');
  // A live table whose (client-chosen) location lies inside the purged one keeps its files.
  const inner = await own.createTable({ namespace: ['web'] }, { name: 'inner', schema, location: `${gone.loc}/nested` });
  await c.t.services.s3.put(key(`${inner.location}/data/x.parquet`), 'bytes');
  const innerKeys = await keys(inner.location);
  assert.equal(innerKeys.length, 2, 'inner: one metadata file and one data file');
  const keptKeys = await keys(kept.loc);
  assert.equal(keptKeys.length, 4, 'two metadata files and two data files');
  assert.equal((await keys(gone.loc)).length, 4 + innerKeys.length);

  await own.dropTable({ namespace: ['web'], name: 'kept' });
  await own.dropTable({ namespace: ['web'], name: 'gone' }, { purge: true });
  assert.equal(await own.tableExists({ namespace: ['web'], name: 'gone' }), false);

  // the job removes the files outside the location after those inside: wait for both
  await waitFor('the purge of gone', async () => (await keys(gone.loc)).length === innerKeys.length && !(await exists(gone.outside)));
  assert.deepEqual(await keys(gone.loc), innerKeys);
  assert.equal(await exists(gone.outside), false, 'the manifest list outside the location is removed');
  // The plain drop queued nothing and removed nothing.
  assert.deepEqual(await keys(kept.loc), keptKeys);
  assert.equal(await exists(kept.outside), true);
  const q = c.t.services.queues.get(QUEUES.catalogPurge);
  await waitFor('the purge job to complete', async () => (await q.getJobs(['completed'])).length === 1);
  const done = await q.getJobs(['completed', 'failed', 'waiting', 'active', 'delayed']);
  assert.equal(done.length, 1);
  assert.deepEqual(done[0].returnvalue, { deleted: 5, kept: 2 });

  const events = await c.t.services.db.selectFrom('audit_events').select(['action', 'actor', 'target', 'details'])
    .where('action', 'in', ['catalog.table.drop', 'catalog.table.purge']).orderBy('id').execute();
  assert.deepEqual(events.map((e) => [e.action, e.actor, e.target]), [
    ['catalog.table.drop', 'ada@example.test via client:engine-1', 'table:web.kept'],
    ['catalog.table.drop', 'ada@example.test via client:engine-1', 'table:web.gone'],
    ['catalog.table.purge', 'lake-system', 'table:web.gone'],
  ]);
  assert.equal((events[2].details as { requested_by: string }).requested_by, 'ada@example.test via client:engine-1');

  // The same purge queued again (a retried drop handler) is the same job: nothing runs twice.
  const job = done[0];
  await enqueuePurge(c.t.services, job.data);
  await new Promise((r) => setTimeout(r, 500));
  const again = await q.getJobs(['completed', 'failed', 'waiting', 'active', 'delayed']);
  assert.equal(again.length, 1);
  assert.equal(again[0].finishedOn, job.finishedOn);
  const purges = await c.t.services.db.selectFrom('audit_events').select('id').where('action', '=', 'catalog.table.purge').execute();
  assert.equal(purges.length, 1);
  assert.equal(await own.tableExists({ namespace: ['web'], name: 'inner' }), true);
});

test('catalog.system_user is the in-process principal: a system administrator of every warehouse, named by the key', async () => {
  const system = systemCaller(c.t.services);
  assert.equal(system.actor, 'lake-system');
  assert.equal(system.actorId, null);
  for (const ws of ['sales', 'any-other']) assert.equal(await requireRight(system, ws, 'manage', 'dropping a table'), 'ws_admin');
  assert.equal(await system.subject('sales'), null, 'policies do not restrict it');
  // The default key names the default principal; another value is another administrator.
  assert.equal(systemCaller({ config: { catalog: { system_user: 'svc-system' } } } as never).actor, 'svc-system');
});
