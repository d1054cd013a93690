// Issue 25's planning figures, in one run, against a real S3 server (s3rver) behind a counting
// proxy (every object the service reads is a GET through it):
// 1. Planning a table of 10,000 data files in 200 manifests (one commit of 50 files each, through
//    the catalog's commit path): warm (decoded manifests in the replica's cache) in process, as
//    the embedded engine plans, and over HTTP as a client does (planTableScan, then fetchScanTasks
//    for each plan task); cold (cache cleared, manifests read from S3) for reference. Baseline:
//    decoding the same 200 manifests' bytes (already in memory) with avsc directly, no planning.
//    Aim: under 100 ms warm.
// 2. Pruning: a query through the embedded engine on one partition value of a table with 50
//    partitions (2 Parquet files each, written by DuckDB with Iceberg field ids) reads only that
//    partition's files: the data files GET from the object store are printed, beside a query
//    without the predicate (every file).
import http from 'node:http';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { startTestApp } from '../test/helpers/app.js';
import { startS3, storageEnv } from '../test/helpers/s3.js';
import { call } from '../test/helpers/catalog-scan.js';
import { decodeAvro } from '../test/helpers/iceberg-expect.js';
import { ensureWorkspace } from '../src/workspaces/workspaces.js';
import { findWarehouse } from '../src/catalog/warehouse.js';
import { commitFiles } from '../src/catalog/table-writes.js';
import { systemCaller } from '../src/catalog/access.js';
import { getTable } from '../src/catalog/tables.js';
import { parseJson } from '../src/catalog/json.js';
import { manifestCache, planTable } from '../src/catalog/scan.js';
import { runQuery } from '../src/queries/run.js';

const MANIFESTS = Number(process.env.BENCH_PLAN_MANIFESTS ?? 200);
const PER_MANIFEST = Number(process.env.BENCH_PLAN_FILES ?? 50);
const ROUNDS = 9;
const TOKEN = 'bench-scan-planning-token-0123456789';
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const ms = (t0: bigint) => Number(process.hrtime.bigint() - t0) / 1e6;

/** An HTTP proxy in front of s3rver that records the key of every GET. */
async function countingProxy(target: string) {
  const gets: string[] = [];
  const t = new URL(target);
  const server = http.createServer((req, res) => {
    if (req.method === 'GET') gets.push(decodeURIComponent((req.url ?? '').split('?')[0]));
    const up = http.request({ host: t.hostname, port: t.port, method: req.method, path: req.url, headers: req.headers }, (r) => { res.writeHead(r.statusCode ?? 502, r.headers); r.pipe(res); });
    up.on('error', () => { res.writeHead(502); res.end(); });
    req.pipe(up);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, gets, close: () => new Promise((r) => server.close(r)) };
}

/** avsc's own container decoder (longs as BigInt: snapshot ids pass 2^53), as test/helpers/iceberg-expect.ts reads manifests. */
const decodeWithAvsc = async (bytes: Uint8Array) => (await decodeAvro(bytes)).records.length;

async function main() {
  const s3 = await startS3('warehouse');
  const proxy = await countingProxy(s3.endpoint);
  const t = await startTestApp({
    SVC_CATALOG__ENABLED: 'true', SVC_CATALOG__AUTH_TOKEN: TOKEN, SVC_CATALOG__WAREHOUSE: 's3://warehouse/lake', SVC_ENGINES__PROVISIONER: 'none',
    ...storageEnv({ ...s3, endpoint: proxy.endpoint }),
  });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const c = { base: `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}/catalog/` };
  const s = t.services;
  const tmp = await mkdtemp(path.join(tmpdir(), 'svc-bench-plan-'));
  try {
    const wsId = (await ensureWorkspace(s.db, 'bench', null)).workspace.id;
    const wh = await findWarehouse(s, 'bench');
    const must = async (method: string, p: string, body?: unknown) => {
      const r = await call(c, method, p, TOKEN, body);
      if (r.status !== 200) throw new Error(`${method} ${p}: ${r.status} ${r.text}`);
      return r.body;
    };
    await must('POST', 'v1/bench/namespaces', { namespace: ['lake'] });

    // ---------- 1. planning 10,000 files in 200 manifests ----------
    const schema = { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'id', type: 'long', required: true }, { id: 2, name: 'region', type: 'string', required: true }] };
    const big = await must('POST', 'v1/bench/namespaces/lake/tables', { name: 'big', schema, 'partition-spec': { 'spec-id': 0, fields: [{ 'source-id': 2, 'field-id': 1000, name: 'region', transform: 'identity' }] } });
    const loc = big.metadata.location as string;
    const t0 = process.hrtime.bigint();
    for (let m = 0; m < MANIFESTS; m++) {
      await commitFiles(s, wh, systemCaller(s), ['lake'], 'big', { dataFiles: Array.from({ length: PER_MANIFEST }, (_, i) => {
        const id = (m * PER_MANIFEST + i) * 1000;
        return { path: `${loc}/data/m${m}-f${i}.parquet`, sizeBytes: 100_000, recordCount: 1000, partition: { region: `r${m % 20}` },
          valueCounts: { 1: 1000, 2: 1000 }, nullValueCounts: { 1: 0, 2: 0 }, lowerBounds: { 1: BigInt(id), 2: `r${m % 20}` }, upperBounds: { 1: BigInt(id + 999), 2: `r${m % 20}` } };
      }) });
    }
    console.log(`table: ${MANIFESTS * PER_MANIFEST} data files in ${MANIFESTS} manifests, written in ${(ms(t0) / 1000).toFixed(1)} s`);
    const row = await getTable(s.db, wh, ['lake'], 'big', 'table');
    const meta = parseJson(row.metadata) as Record<string, unknown>;
    const plan0 = await planTable(s, wh, meta, {});
    const manifestPaths = [...new Set(plan0.dataManifests.map((m) => m.path))];
    const manifestBytes = await Promise.all(manifestPaths.map(async (p) => (await s.s3.get(p.replace(/^s3:\/\/warehouse\//, '')))!));

    const baseline: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const a = process.hrtime.bigint();
      let n = 0;
      for (const b of manifestBytes) n += await decodeWithAvsc(b);
      baseline.push(ms(a));
      if (n !== MANIFESTS * PER_MANIFEST) throw new Error(`avsc decoded ${n} entries`);
    }
    const cold: number[] = [];
    for (let r = 0; r < 3; r++) {
      manifestCache(s).clear();
      const a = process.hrtime.bigint();
      const p = await planTable(s, wh, meta, {});
      cold.push(ms(a));
      if (p.tasks.length !== MANIFESTS * PER_MANIFEST) throw new Error(`cold plan: ${p.tasks.length} files`);
    }
    const warm: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const a = process.hrtime.bigint();
      const p = await planTable(s, wh, meta, {});
      warm.push(ms(a));
      if (p.tasks.length !== MANIFESTS * PER_MANIFEST) throw new Error(`warm plan: ${p.tasks.length} files`);
    }
    // A client fetches plan tasks one after another, or on a pool (the Java client's planning executor).
    const overHttp = async (body: unknown, parallel = 1) => {
      const a = process.hrtime.bigint();
      const planned = await must('POST', 'v1/bench/namespaces/lake/tables/big/plan', body);
      let files = planned['file-scan-tasks']?.length ?? 0;
      const queue = [...(planned['plan-tasks'] ?? [])];
      await Promise.all(Array.from({ length: parallel }, async () => {
        for (let task = queue.shift(); task !== undefined; task = queue.shift()) files += (await must('POST', 'v1/bench/namespaces/lake/tables/big/tasks', { 'plan-task': task }))['file-scan-tasks'].length;
      }));
      return { ms: ms(a), files, tasks: (planned['plan-tasks'] ?? []).length };
    };
    const http1: number[] = [];
    const http4: number[] = [];
    let shape = { files: 0, tasks: 0 };
    for (let r = 0; r < ROUNDS; r++) { const x = await overHttp({}); http1.push(x.ms); shape = x; }
    for (let r = 0; r < ROUNDS; r++) http4.push((await overHttp({}, 4)).ms);
    const filtered: number[] = [];
    let fshape = { files: 0, tasks: 0 };
    for (let r = 0; r < ROUNDS; r++) { const x = await overHttp({ filter: { type: 'eq', term: 'region', value: 'r3' } }); filtered.push(x.ms); fshape = x; }

    const base = median(baseline);
    const rows: Array<[string, number, string]> = [
      [`avsc: decode the ${MANIFESTS} manifests (baseline)`, base, ''],
      ['plan in process, cold (manifests from S3)', median(cold), ''],
      ['plan in process, warm (the embedded engine\'s path)', median(warm), `${MANIFESTS * PER_MANIFEST} files`],
      ['planTableScan + fetchScanTasks over HTTP, warm, tasks one by one', median(http1), `${shape.files} files in ${shape.tasks} plan tasks`],
      ['  the same, 4 plan tasks at a time', median(http4), ''],
      ['  the same with region = r3', median(filtered), `${fshape.files} files in ${fshape.tasks} plan tasks`],
    ];
    console.log('\n| planning | median ms | vs baseline | |\n|---|---|---|---|');
    for (const [name, v, note] of rows) console.log(`| ${name} | ${v.toFixed(1)} | ${(v / base).toFixed(2)}x | ${note} |`);
    console.log(`aim: warm planning under 100 ms: in process ${median(warm) < 100 ? 'met' : 'NOT met'}, over HTTP ${Math.min(median(http1), median(http4)) < 100 ? 'met' : 'NOT met'}`);

    // ---------- 2. pruning: one partition of 50 through the query API ----------
    const pschema = { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'id', type: 'long', required: true }, { id: 2, name: 'store_id', type: 'int', required: true }, { id: 3, name: 'amount', type: 'double', required: false }] };
    // Two tables of the same 100 files at their own locations (the engine's file cache keys by
    // location): `stores` for the one-partition query, `stores_all` for the baseline.
    const spec = { 'spec-id': 0, fields: [{ 'source-id': 2, 'field-id': 1000, name: 'store_id', transform: 'identity' }] };
    const locs: Record<string, string> = {};
    for (const name of ['stores', 'stores_all']) locs[name] = (await must('POST', 'v1/bench/namespaces/lake/tables', { name, schema: pschema, 'partition-spec': spec })).metadata.location;
    const { DuckDBInstance } = await import('@duckdb/node-api');
    const duck = await (await DuckDBInstance.create(':memory:')).connect();
    const dataFiles: Record<string, unknown[]> = { stores: [], stores_all: [] };
    for (let store = 0; store < 50; store++) {
      for (let part = 0; part < 2; part++) {
        const local = path.join(tmp, `s${store}-${part}.parquet`);
        const first = (store * 2 + part) * 10_000;
        await duck.run(`COPY (SELECT (${first} + i)::BIGINT AS id, ${store}::INTEGER AS store_id, (i % 100)::DOUBLE AS amount FROM range(10000) t(i)) TO '${local}' (FORMAT parquet, FIELD_IDS {id: 1, store_id: 2, amount: 3})`);
        const bytes = await readFile(local);
        for (const name of ['stores', 'stores_all']) {
          const location = `${locs[name]}/data/store=${store}/part-${part}.parquet`;
          await s.s3.put(location.replace(/^s3:\/\/warehouse\//, ''), bytes, 'application/octet-stream');
          dataFiles[name].push({ path: location, sizeBytes: bytes.length, recordCount: 10_000, partition: { store_id: store },
            valueCounts: { 1: 10_000, 2: 10_000, 3: 10_000 }, nullValueCounts: { 1: 0, 2: 0, 3: 0 },
            lowerBounds: { 1: BigInt(first), 2: store, 3: 0 }, upperBounds: { 1: BigInt(first + 9999), 2: store, 3: 99 } });
        }
      }
    }
    duck.closeSync();
    for (const name of ['stores', 'stores_all']) await commitFiles(s, wh, systemCaller(s), ['lake'], name, { dataFiles: dataFiles[name] as never });
    const query = async (sql: string) => {
      const before = proxy.gets.length;
      const a = process.hrtime.bigint();
      const r = await runQuery(s.queryEngines, s.config, { workspace: wsId, engine: 'embedded', sql, principal: { name: 'bench@example.test', role: 'ws_viewer' } });
      const took = ms(a);
      const read = proxy.gets.slice(before).filter((k) => k.includes('/data/')).map((k) => k.slice(k.indexOf('/data/') + 6));
      return { rows: r.rows, read: [...new Set(read)].sort(), took };
    };
    const one = await query('SELECT count(*) AS n, sum(amount) AS total FROM iceberg.lake.stores WHERE store_id = 7');
    const every = await query('SELECT count(*) AS n, sum(amount) AS total FROM iceberg.lake.stores_all');
    console.log('\n| query (cold: nothing in the engine\'s file cache) | data files read from the object store | rows | ms |\n|---|---|---|---|');
    console.log(`| one partition: store_id = 7 | ${one.read.length} of 100: ${one.read.join(', ')} | ${JSON.stringify(one.rows[0])} | ${one.took.toFixed(0)} |`);
    console.log(`| every partition (baseline) | ${every.read.length} of 100 | ${JSON.stringify(every.rows[0])} | ${every.took.toFixed(0)} |`);
    const only = one.read.every((f) => f.startsWith('store=7/')) && one.read.length === 2;
    console.log(`pruning: the one-partition query read ${only ? 'only' : 'NOT only'} that partition's files (${one.read.length} / ${every.read.length} = ${(one.read.length / Math.max(1, every.read.length)).toFixed(2)} of the baseline's)`);
  } finally {
    await rm(tmp, { recursive: true, force: true });
    await t.close();
    await proxy.close();
    await s3.stop();
  }
}

main().then(() => process.exit(0), (err) => { console.error(err); process.exit(1); });
