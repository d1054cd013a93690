// Issue 11 figure: client-credentials grants at `POST /oauth/token` (a client authenticating with
// client_secret_basic and getting a signed JWT) against an unauthenticated `GET /healthz`, on the
// same `svc serve` process, same run, loopback. Aim: at least 0.25 of /healthz.
// The rate limit stays on at its defaults: a client repeating a secret this replica verified is
// not counted (SPEC 8), so one client keeps asking as an engine fleet would.
import autocannon from 'autocannon';
import { CpuPerRequest } from './process-cpu.js';
import { createTestDatabase } from '../test/helpers/db.js';
import { serviceEnv, spawnSvc, runSvc, waitExit } from '../test/helpers/cli.js';
import { freePort } from '../test/helpers/net.js';
import { redisUrl } from '../test/helpers/redis-dbs.js';

const DURATION = Number(process.env.BENCH_SECONDS ?? 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);

function load(opts: { url: string; method?: 'GET' | 'POST'; headers?: Record<string, string>; body?: string }): Promise<{ rate: number; total: number }> {
  return new Promise((resolve, reject) => {
    autocannon({ url: opts.url, method: opts.method ?? 'GET', headers: opts.headers, body: opts.body, connections: CONNECTIONS, duration: DURATION }, (err, res) => {
      if (err) return reject(err);
      if (res.non2xx > 0 || res.errors > 0) return reject(new Error(`${opts.url}: ${res.non2xx} non-2xx, ${res.errors} errors`));
      resolve({ rate: res.requests.average, total: res.requests.total });
    });
  });
}

async function main() {
  const db = await createTestDatabase('svc_bench');
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const env = serviceEnv(db.url, { endpoint: 'http://127.0.0.1:1', accessKey: 'ak', secretKey: 'sk' }, { SVC_REDIS__URL: redisUrl('bench'),
    SVC_SERVER__HOST: '127.0.0.1', SVC_SERVER__PORT: String(port), SVC_LOG__JSON: 'true', SVC_LOG__FILTER: 'warn',
    SVC_IDP__ISSUER: base,
    SVC_SECRETS__MASTER_KEY: Buffer.alloc(32, 7).toString('base64'),
  });
  const add = await runSvc(['client', 'add', '--name', 'bench engine', '--audience', 'svc-catalog'], { env });
  if (add.code !== 0) throw new Error(add.stderr);
  const id = /client_id: (\S+)/.exec(add.stdout)![1];
  const secret = /client_secret: (\S+)/.exec(add.stdout)![1];
  const { child } = await spawnSvc(['serve'], { env: { ...env, SVC_LOG__FILTER: process.env.BENCH_LOG_FILTER ?? 'warn,svc=info' }, ready: /"msg":"listening"/ });
  try {
    const grant = {
      url: `${base}/oauth/token`, method: 'POST' as const, body: 'grant_type=client_credentials',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`,
      },
    };
    const first = await fetch(grant.url, { method: 'POST', headers: grant.headers, body: grant.body });
    if (first.status !== 200) throw new Error(`token ${first.status}: ${await first.text()}`);
    await load({ url: `${base}/healthz` }); // warm-up
    await load(grant);
    const cpu = new CpuPerRequest(child.pid!);
    const health: number[] = []; const tokens: number[] = [];
    for (let round = 0; round < 2; round++) {
      health.push((await cpu.measure('health', () => load({ url: `${base}/healthz` }))).rate);
      tokens.push((await cpu.measure('grant', () => load(grant))).rate);
    }
    const avg = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    const us = (name: string) => { const v = cpu.perRequest(name); return v === undefined ? '    n/a' : `${v.toFixed(0).padStart(7)}`; };
    console.log(`token endpoint: ${CONNECTIONS} connections, ${DURATION}s x 2 rounds each, interleaved`);
    console.log(`GET /healthz (baseline, no auth)          ${avg(health).toFixed(0).padStart(7)} req/s   server CPU ${us('health')} µs/req`);
    console.log(`POST /oauth/token (client credentials)    ${avg(tokens).toFixed(0).padStart(7)} req/s   server CPU ${us('grant')} µs/req`);
    console.log(`ratio grants : /healthz                   ${(avg(tokens) / avg(health)).toFixed(2)}  (aim >= 0.25)`);
    const h = cpu.perRequest('health'); const g = cpu.perRequest('grant');
    if (h !== undefined && g !== undefined) console.log(`ratio by server CPU per request           ${(h / g).toFixed(2)}  (steadier on a loaded machine)`);
  } finally {
    child.kill('SIGTERM');
    await waitExit(child);
    await db.drop();
  }
}

await main();
