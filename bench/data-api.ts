// Issue 15 figure: Data API throughput on a `svc serve` process over loopback, in one run, beside
// GET /healthz on the same server (the baseline: plain HTTP, no work). Two calls of a published
// endpoint with a machine-IdP bearer token: a cached one (the same parameters every time: token
// check, rate-limit bucket, endpoint lookup, cache hit) and an uncached one (a new parameter value
// each time: the same plus a run on the embedded engine). Rounds alternate the three so they
// share the machine's state; each keeps CONCURRENCY requests in flight.
// Aim: the cached call at least 0.5 of /healthz throughput.
import { createTestDatabase } from '../test/helpers/db.js';
import { serviceEnv, spawnSvc, runSvc, waitExit, signInHttp } from '../test/helpers/cli.js';
import { freePort } from '../test/helpers/net.js';
import { redisUrl } from '../test/helpers/redis-dbs.js';

const PER_ROUND = Number(process.env.BENCH_DATA_API_CALLS ?? 500);
const ROUNDS = 6;
const CONCURRENCY = 8;

async function main() {
  const db = await createTestDatabase('svc_bench_data_api');
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const env = serviceEnv(db.url, { endpoint: 'http://127.0.0.1:1', accessKey: 'ak', secretKey: 'sk' }, { SVC_REDIS__URL: redisUrl('bench'),
    SVC_SERVER__HOST: '127.0.0.1', SVC_SERVER__PORT: String(port), SVC_LOG__JSON: 'true', SVC_LOG__FILTER: 'warn',
    SVC_ADMIN_EMAIL: 'bench@example.test', SVC_ADMIN_PASSWORD: 'bench-password-1', SVC_ENGINES__PROVISIONER: 'none',
    SVC_DATA_API__PUBLIC_URL: base,
    // The limiter runs on every call but never refuses one here.
    SVC_DATA_API__RATE_LIMIT_PER_MINUTE: '100000000', SVC_DATA_API__RATE_LIMIT_BURST: '10000000', SVC_DATA_API__CACHE_TTL_SECS: '600',
  });
  const init = await runSvc(['init'], { env });
  if (init.code !== 0) throw new Error(init.stderr);
  const { child } = await spawnSvc(['serve'], { env: { ...env, SVC_LOG__FILTER: 'warn,svc=info' }, ready: /"msg":"listening"/ });
  try {
    const session = await signInHttp(base, 'bench@example.test', 'bench-password-1');
    const headers = { 'content-type': 'application/json', ...session.headers };
    const pub = await fetch(`${base}/api/workspaces/default/data-api/endpoints/squares`, {
      method: 'PUT', headers, body: JSON.stringify({ sql: 'SELECT $n AS n, $n * $n AS square, \'row \' || $n AS label', params: [{ name: 'n', type: 'integer', default: 1 }] }),
    });
    if (pub.status !== 201) throw new Error(`publish ${pub.status} ${await pub.text()}`);
    const client = await (await fetch(`${base}/api/workspaces/default/data-api/clients`, { method: 'POST', headers, body: JSON.stringify({ name: 'bench', endpoints: ['squares'] }) })).json() as { client_id: string; client_secret: string; token_endpoint: string };
    const tok = await fetch(client.token_endpoint, {
      method: 'POST', body: new URLSearchParams({ grant_type: 'client_credentials' }),
      headers: { authorization: `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64')}` },
    });
    const bearer = { authorization: `Bearer ${((await tok.json()) as { access_token: string }).access_token}` };

    let next = 1_000;
    const kinds = {
      healthz: async () => { const r = await fetch(`${base}/healthz`); await r.arrayBuffer(); return r.status === 200; },
      cached: async () => { const r = await fetch(`${base}/data-api/default/squares?n=7`, { headers: bearer }); await r.arrayBuffer(); return r.status === 200 && r.headers.get('x-data-api-cache') !== 'miss'; },
      uncached: async () => { const r = await fetch(`${base}/data-api/default/squares?n=${next++}`, { headers: bearer }); await r.arrayBuffer(); return r.status === 200 && r.headers.get('x-data-api-cache') === 'miss'; },
    };
    type Kind = keyof typeof kinds;
    const run = async (kind: Kind, n: number) => {
      let left = n;
      const t0 = performance.now();
      await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
        while (left-- > 0) if (!(await kinds[kind]())) throw new Error(`${kind}: unexpected answer`);
      }));
      return performance.now() - t0;
    };
    // The cached call's answer is in the cache before any is timed.
    await (await fetch(`${base}/data-api/default/squares?n=7`, { headers: bearer })).arrayBuffer();
    for (const k of Object.keys(kinds) as Kind[]) await run(k, 200); // warm-up
    const ms: Record<Kind, number> = { healthz: 0, cached: 0, uncached: 0 };
    for (let r = 0; r < ROUNDS; r++) for (const k of Object.keys(kinds) as Kind[]) ms[k] += await run(k, PER_ROUND);
    const rps = (k: Kind) => (ROUNDS * PER_ROUND) / (ms[k] / 1000);
    console.log(`data-api: ${ROUNDS} rounds of ${PER_ROUND} calls each kind, ${CONCURRENCY} in flight, interleaved (after 200 warm-up each)`);
    console.log(`GET /healthz (baseline)             ${rps('healthz').toFixed(0)} req/s`);
    console.log(`cached endpoint call                ${rps('cached').toFixed(0)} req/s   ratio to /healthz ${(rps('cached') / rps('healthz')).toFixed(2)}  (aim >= 0.5)`);
    console.log(`uncached endpoint call (DuckDB run) ${rps('uncached').toFixed(0)} req/s   ratio to /healthz ${(rps('uncached') / rps('healthz')).toFixed(2)}`);
  } finally {
    child.kill('SIGTERM');
    await waitExit(child);
    await db.drop();
  }
}

await main();
