// Issue 12 figures: the embedded Iceberg REST catalog on a `svc serve` process over loopback, in
// one run, beside GET /healthz on the same server (the baseline: plain HTTP, no work), against a
// real S3 server (s3rver). Engines' calls, with a client-credentials JWT of the service's own
// identity provider:
// - table load (GET .../tables/{t}, a table with 20 snapshots) and a conditional load answered
//   304 by its ETag: throughput with CONCURRENCY in flight, interleaved with /healthz, and
//   latency one at a time;
// - remote signing (POST .../tables/{t}/sign of a ranged GET of a data file: the storage rule's
//   allow-list and ownership decision, then @smithy's SigV4), which engines call for every
//   object-store request: throughput and latency as for loads;
// - commit (POST .../tables/{t}: set-properties, one table per writer, so no CAS conflict):
//   throughput and latency; each writes a metadata file to S3 and swaps the row;
// - a commit race: RACERS writers assert the same `main` snapshot and add one each, RACE_ROUNDS
//   times: winners (200) and losers (409 CommitFailedException) per round, commits/s.
// Aim: a table load within 3x the cost of /healthz (cost = 1 / throughput).
import { createTestDatabase } from '../test/helpers/db.js';
import { spawnSvc, runSvc, waitExit } from '../test/helpers/cli.js';
import { freePort } from '../test/helpers/net.js';
import { startS3 } from '../test/helpers/s3.js';
import { catalogBenchEnv } from './lib/catalog-env.js';

const PER_ROUND = Number(process.env.BENCH_CATALOG_CALLS ?? 500);
const ROUNDS = 6;
const CONCURRENCY = 8;
const COMMITS = Number(process.env.BENCH_CATALOG_COMMITS ?? 200);
const RACERS = 16;
const RACE_ROUNDS = 10;
const TOKEN = 'bench-catalog-admin-token-0123456789';

const schema = { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'id', type: 'long', required: true }, { id: 2, name: 'ts', type: 'timestamp', required: true }] };
let snapshotId = 8_000_000_000_000_000_000n;
const snapshotUpdate = (parent: string | null, seq: number) => {
  const id = String(snapshotId++);
  const snap = `{"snapshot-id":${id},${parent ? `"parent-snapshot-id":${parent},` : ''}"sequence-number":${seq},"timestamp-ms":${Date.now()},"manifest-list":"s3://warehouse/lake/default/m/snap-${id}.avro","summary":{"operation":"append"},"schema-id":0}`;
  return { id, body: `{"requirements":[{"type":"assert-ref-snapshot-id","ref":"main","snapshot-id":${parent ?? 'null'}}],"updates":[{"action":"add-snapshot","snapshot":${snap}},{"action":"set-snapshot-ref","ref-name":"main","type":"branch","snapshot-id":${id}}]}` };
};

const pct = (xs: number[], p: number) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]; };

async function main() {
  const db = await createTestDatabase('svc_bench_catalog');
  const s3 = await startS3('warehouse');
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const env = catalogBenchEnv(db.url, s3, port, TOKEN);
  const init = await runSvc(['init'], { env });
  if (init.code !== 0) throw new Error(init.stderr);
  const added = await runSvc(['client', 'add', '--name', 'bench-engine', '--audience', 'svc-catalog', '--workspace', 'default'], { env });
  if (added.code !== 0) throw new Error(added.stderr);
  const id = /client_id: (\S+)/.exec(added.stdout)![1];
  const secret = /client_secret: (\S+)/.exec(added.stdout)![1];
  const { child } = await spawnSvc(['serve'], { env: { ...env, SVC_LOG__FILTER: 'warn,svc=info' }, ready: /"msg":"listening"/ });
  try {
    const tok = await fetch(`${base}/oauth/token`, {
      method: 'POST', body: new URLSearchParams({ grant_type: 'client_credentials', client_id: id, client_secret: secret }),
    });
    if (tok.status !== 200) throw new Error(`token ${tok.status} ${await tok.text()}`);
    const auth = { authorization: `Bearer ${((await tok.json()) as { access_token: string }).access_token}` };
    const cat = `${base}/catalog/v1/default/namespaces`;
    const call = async (method: string, url: string, body?: string, headers: Record<string, string> = {}) => {
      const r = await fetch(url, { method, headers: { ...auth, ...(body ? { 'content-type': 'application/json' } : {}), ...headers }, body });
      const text = await r.text();
      return { status: r.status, text, etag: r.headers.get('etag') };
    };
    const must = async (method: string, url: string, body?: string) => {
      const r = await call(method, url, body);
      if (r.status !== 200 && r.status !== 204) throw new Error(`${method} ${url}: ${r.status} ${r.text}`);
      return r;
    };
    await must('POST', cat, JSON.stringify({ namespace: ['bench'] }));
    const tables = Array.from({ length: CONCURRENCY }, (_, i) => `t${i}`);
    for (const t of ['events', 'race', ...tables]) await must('POST', `${cat}/bench/tables`, JSON.stringify({ name: t, schema, properties: { owner: 'bench' } }));
    // A table with some history: 20 snapshots, so a load carries a realistic metadata document.
    let parent: string | null = null;
    for (let i = 1; i <= 20; i++) { const u = snapshotUpdate(parent, i); await must('POST', `${cat}/bench/tables/events`, u.body); parent = u.id; }
    const loadUrl = `${cat}/bench/tables/events`;
    const loaded = await must('GET', loadUrl);
    const etag = loaded.etag!;
    console.log(`catalog: table metadata ${loaded.text.length} bytes of JSON per load`);
    const location = (JSON.parse(loaded.text) as { metadata: { location: string } }).metadata.location.replace('s3://warehouse/', '');
    const signBody = JSON.stringify({ region: 'us-east-1', method: 'GET', uri: `${s3.endpoint}/warehouse/${location}/data/00000-0-a.parquet`, headers: { range: ['bytes=4-1024'], 'user-agent': ['bench'] } });

    const kinds = {
      healthz: async () => { const r = await fetch(`${base}/healthz`); await r.arrayBuffer(); return r.status === 200; },
      load: async () => (await call('GET', loadUrl)).status === 200,
      load304: async () => (await call('GET', loadUrl, undefined, { 'if-none-match': etag })).status === 304,
      sign: async () => (await call('POST', `${loadUrl}/sign`, signBody)).status === 200,
    };
    type Kind = keyof typeof kinds;
    const run = async (kind: Kind, n: number, concurrency = CONCURRENCY) => {
      let left = n;
      const t0 = performance.now();
      await Promise.all(Array.from({ length: concurrency }, async () => {
        while (left-- > 0) if (!(await kinds[kind]())) throw new Error(`${kind}: unexpected answer`);
      }));
      return performance.now() - t0;
    };
    const latency = async (kind: Kind, n: number) => {
      const xs: number[] = [];
      for (let i = 0; i < n; i++) { const t0 = performance.now(); if (!(await kinds[kind]())) throw new Error(kind); xs.push(performance.now() - t0); }
      return xs;
    };
    for (const k of Object.keys(kinds) as Kind[]) await run(k, 200); // warm-up
    const ms: Record<Kind, number> = { healthz: 0, load: 0, load304: 0, sign: 0 };
    for (let r = 0; r < ROUNDS; r++) for (const k of Object.keys(kinds) as Kind[]) ms[k] += await run(k, PER_ROUND);
    const rps = (k: Kind) => (ROUNDS * PER_ROUND) / (ms[k] / 1000);
    const lat: Record<Kind, number[]> = { healthz: [], load: [], load304: [], sign: [] };
    for (let r = 0; r < 3; r++) for (const k of Object.keys(kinds) as Kind[]) lat[k].push(...await latency(k, 200));
    const l = (k: Kind) => `p50 ${pct(lat[k], 50).toFixed(2)} ms  p99 ${pct(lat[k], 99).toFixed(2)} ms`;
    console.log(`throughput: ${ROUNDS} rounds of ${PER_ROUND} calls each kind, ${CONCURRENCY} in flight, interleaved (after 200 warm-up each); latency: 600 calls one at a time`);
    console.log(`GET /healthz (baseline)        ${rps('healthz').toFixed(0).padStart(6)} req/s   ${l('healthz')}`);
    console.log(`load table                     ${rps('load').toFixed(0).padStart(6)} req/s   ${l('load')}   cost ${(rps('healthz') / rps('load')).toFixed(2)}x /healthz (aim <= 3)`);
    console.log(`load table, ETag -> 304        ${rps('load304').toFixed(0).padStart(6)} req/s   ${l('load304')}   cost ${(rps('healthz') / rps('load304')).toFixed(2)}x /healthz`);
    console.log(`sign a ranged GET              ${rps('sign').toFixed(0).padStart(6)} req/s   ${l('sign')}   cost ${(rps('healthz') / rps('sign')).toFixed(2)}x /healthz`);

    // Commits: one table per writer (no conflict), set-properties.
    let n = 0;
    const commit = (t: string) => must('POST', `${cat}/bench/tables/${t}`, `{"requirements":[],"updates":[{"action":"set-properties","updates":{"n":"${n++}"}}]}`);
    const cl: number[] = [];
    for (let i = 0; i < COMMITS / 2; i++) { const t0 = performance.now(); await commit('t0'); cl.push(performance.now() - t0); }
    let left = COMMITS;
    const c0 = performance.now();
    await Promise.all(tables.map(async (t) => { while (left-- > 0) await commit(t); }));
    const commitRps = COMMITS / ((performance.now() - c0) / 1000);
    const h0 = performance.now();
    await run('healthz', COMMITS);
    const healthzNow = COMMITS / ((performance.now() - h0) / 1000);
    console.log(`commit (metadata file to S3 + CAS) ${commitRps.toFixed(0).padStart(6)} commits/s with ${CONCURRENCY} writers on ${CONCURRENCY} tables   one at a time p50 ${pct(cl, 50).toFixed(2)} ms  p99 ${pct(cl, 99).toFixed(2)} ms   cost ${(healthzNow / commitRps).toFixed(1)}x /healthz`);

    // The race: RACERS writers assert the same main snapshot.
    let winners = 0;
    let conflicts = 0;
    let other = 0;
    let oneWinnerRounds = 0;
    let raceParent: string | null = null;
    let seq = 1;
    const r0 = performance.now();
    for (let r = 0; r < RACE_ROUNDS; r++) {
      const updates = Array.from({ length: RACERS }, () => snapshotUpdate(raceParent, seq));
      const answers = await Promise.all(updates.map((u) => call('POST', `${cat}/bench/tables/race`, u.body)));
      const won = answers.map((a, i) => (a.status === 200 ? updates[i].id : null)).filter((x): x is string => x !== null);
      winners += won.length;
      conflicts += answers.filter((a) => a.status === 409 && a.text.includes('CommitFailedException')).length;
      other += answers.filter((a) => a.status !== 200 && a.status !== 409).length;
      if (won.length === 1) oneWinnerRounds++;
      raceParent = won[0] ?? raceParent;
      seq++;
    }
    const raceSecs = (performance.now() - r0) / 1000;
    console.log(`commit race: ${RACE_ROUNDS} rounds of ${RACERS} writers asserting the same main snapshot: ${winners} won (200), ${conflicts} lost (409 CommitFailedException), ${other} other; ${oneWinnerRounds}/${RACE_ROUNDS} rounds with exactly one winner; ${(winners / raceSecs).toFixed(1)} commits/s, ${((RACERS * RACE_ROUNDS) / raceSecs).toFixed(0)} attempts/s`);
    const final = JSON.parse((await must('GET', `${cat}/bench/tables/race`)).text) as { metadata: { snapshots: unknown[] } };
    console.log(`race table: ${final.metadata.snapshots.length} snapshots (= winners: nothing lost, nothing doubled)`);
  } finally {
    child.kill('SIGTERM');
    await waitExit(child);
    await s3.stop();
    await db.drop();
  }
}

await main();
