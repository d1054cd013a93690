// Issue 13 figure: 1,000 small queries on the embedded engine through the query API
// (POST /api/workspaces/default/queries on a `svc serve` process over loopback: session check,
// access, engine choice, sandboxed run, one INSERT of the recorded query) beside the same
// queries on DuckDB directly (one open connection in this process, the lowest baseline), in one
// run, interleaved one by one. The record of each query is written behind its answer
// (src/queries/records.ts), so it is not in the timed path; reading it back would be.
// Aim (issue 27 point 10): overhead per query at the median at most one HTTP round trip (GET
// /healthz on the same server, timed in the same run) plus 0.5 ms.
// BENCH_NODE_OPTIONS is given to the server (e.g. --cpu-prof --cpu-prof-dir=/tmp/prof).
import { DuckDBInstance } from '@duckdb/node-api';
import { createTestDatabase, query } from '../test/helpers/db.js';
import { serviceEnv, spawnSvc, runSvc, waitExit, signInHttp } from '../test/helpers/cli.js';
import { freePort } from '../test/helpers/net.js';
import { redisUrl } from '../test/helpers/redis-dbs.js';

const N = Number(process.env.BENCH_QUERIES ?? 1000);
const WARMUP = 100;
const sql = (i: number) => `SELECT ${i} AS i, 'row ' || ${i} AS label, ${i} * 2 AS twice`;

const pct = (xs: number[], p: number) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(p * s.length))]!; };

async function main() {
  const db = await createTestDatabase('svc_bench');
  const port = await freePort();
  const env = serviceEnv(db.url, { endpoint: 'http://127.0.0.1:1', accessKey: 'ak', secretKey: 'sk' }, { SVC_REDIS__URL: redisUrl('bench'),
    SVC_SERVER__HOST: '127.0.0.1', SVC_SERVER__PORT: String(port), SVC_LOG__JSON: 'true', SVC_LOG__FILTER: 'warn',
    SVC_ADMIN_EMAIL: 'bench@example.test', SVC_ADMIN_PASSWORD: 'bench-password-1', SVC_ENGINES__PROVISIONER: 'none',
  });
  const init = await runSvc(['init'], { env });
  if (init.code !== 0) throw new Error(init.stderr);
  const { child } = await spawnSvc(['serve'], { env: { ...env, SVC_LOG__FILTER: process.env.BENCH_LOG_FILTER ?? 'warn,svc=info', ...(process.env.BENCH_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_NODE_OPTIONS } : {}) }, ready: /"msg":"listening"/ });
  const direct = await DuckDBInstance.create(':memory:', { threads: '2', memory_limit: '1GB' });
  const conn = await direct.connect();
  try {
    const base = `http://127.0.0.1:${port}`;
    const session = await signInHttp(base, 'bench@example.test', 'bench-password-1');
    const headers = { 'content-type': 'application/json', ...session.headers };

    const viaApi = async (i: number) => {
      const t0 = performance.now();
      const res = await fetch(`${base}/api/workspaces/default/queries`, { method: 'POST', headers, body: JSON.stringify({ sql: sql(i), wait_ms: 5000 }) });
      const q = await res.json() as { state: string; preview: unknown[][] };
      const ms = performance.now() - t0;
      if (res.status !== 200 || q.state !== 'SUCCEEDED' || q.preview[0]![0] !== i) throw new Error(`query ${i}: ${res.status} ${JSON.stringify(q)}`);
      return ms;
    };
    const viaDuckDB = async (i: number) => {
      const t0 = performance.now();
      const r = await conn.runAndReadAll(sql(i));
      const rows = r.getRowsJson();
      const ms = performance.now() - t0;
      if (rows[0]![0] !== i) throw new Error(`direct query ${i}`);
      return ms;
    };
    // Context, not the baseline: what one loopback HTTP round trip to the same server costs.
    const viaHealthz = async () => {
      const t0 = performance.now();
      const res = await fetch(`${base}/healthz`);
      await res.arrayBuffer();
      return performance.now() - t0;
    };
    for (let i = 0; i < WARMUP; i++) { await viaApi(i); await viaDuckDB(i); await viaHealthz(); }
    const api: number[] = []; const duck: number[] = []; const http: number[] = [];
    for (let i = 0; i < N; i++) { api.push(await viaApi(i)); duck.push(await viaDuckDB(i)); http.push(await viaHealthz()); }
    // Every answered query is recorded: the history (whose read waits for the records behind) holds them all.
    await fetch(`${base}/api/workspaces/default/queries?limit=1`, { headers });
    const [{ n }] = await query<{ n: string }>(db.url, 'SELECT count(*)::text AS n FROM queries WHERE state = \'SUCCEEDED\'');
    if (Number(n) !== WARMUP + N) throw new Error(`${n} queries recorded, ${WARMUP + N} answered`);
    const overhead = pct(api, 0.5) - pct(duck, 0.5);
    console.log(`queries: ${N} small queries each way, one at a time, interleaved (after ${WARMUP} warm-up each)`);
    console.log(`DuckDB directly (baseline)        median ${pct(duck, 0.5).toFixed(3)} ms   p90 ${pct(duck, 0.9).toFixed(3)} ms`);
    console.log(`through the query API (HTTP)      median ${pct(api, 0.5).toFixed(3)} ms   p90 ${pct(api, 0.9).toFixed(3)} ms`);
    console.log(`ratio API : DuckDB at the median  ${(pct(api, 0.5) / pct(duck, 0.5)).toFixed(1)}`);
    const aim = pct(http, 0.5) + 0.5;
    console.log(`one HTTP round trip               median ${pct(http, 0.5).toFixed(3)} ms   (GET /healthz on the same server)`);
    console.log(`overhead per query at the median  ${overhead.toFixed(3)} ms  = ${(overhead / pct(http, 0.5)).toFixed(2)} HTTP round trips   (aim <= one round trip + 0.5 ms = ${aim.toFixed(3)} ms: ${overhead <= aim ? 'met' : 'NOT met'})`);
  } finally {
    conn.closeSync();
    direct.closeSync();
    child.kill('SIGTERM');
    await waitExit(child);
    await db.drop();
  }
}

await main();
