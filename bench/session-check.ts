// Issue 3 figure: an authenticated `GET /api/me` (session cookie resolved, access snapshot read)
// against an unauthenticated `GET /healthz`, on the same `svc serve` process, same run, loopback.
// Aim: the authenticated route keeps at least 0.6 of the throughput of /healthz (issue 11; it was
// 0.5 in issue 3, before /api/me moved to fastify's compiled serializer).
import autocannon from 'autocannon';
import { CpuPerRequest } from './process-cpu.js';
import { createTestDatabase } from '../test/helpers/db.js';
import { serviceEnv, spawnSvc, runSvc, waitExit, signInHttp } from '../test/helpers/cli.js';
import { freePort } from '../test/helpers/net.js';
import { redisUrl } from '../test/helpers/redis-dbs.js';

const DURATION = Number(process.env.BENCH_SECONDS ?? 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);

function load(url: string, headers: Record<string, string>): Promise<{ rate: number; total: number }> {
  return new Promise((resolve, reject) => {
    autocannon({ url, connections: CONNECTIONS, duration: DURATION, headers }, (err, res) => {
      if (err) return reject(err);
      if (res.non2xx > 0 || res.errors > 0) return reject(new Error(`${url}: ${res.non2xx} non-2xx, ${res.errors} errors`));
      resolve({ rate: res.requests.average, total: res.requests.total });
    });
  });
}

async function main() {
  const db = await createTestDatabase('svc_bench');
  const port = await freePort();
  const env = serviceEnv(db.url, { endpoint: 'http://127.0.0.1:1', accessKey: 'ak', secretKey: 'sk' }, { SVC_REDIS__URL: redisUrl('bench'),
    SVC_SERVER__HOST: '127.0.0.1', SVC_SERVER__PORT: String(port), SVC_LOG__JSON: 'true', SVC_LOG__FILTER: 'warn',
    SVC_ADMIN_EMAIL: 'bench@example.test', SVC_ADMIN_PASSWORD: 'bench-password-1',
    // The bench signs in once; keep the login limiter out of the way of repeated runs.
    SVC_RATE_LIMIT__LOGIN_MAX_ATTEMPTS: '1000',
  });
  const init = await runSvc(['init'], { env });
  if (init.code !== 0) throw new Error(init.stderr);
  const { child } = await spawnSvc(['serve'], { env: { ...env, SVC_LOG__FILTER: process.env.BENCH_LOG_FILTER ?? 'warn,svc=info' }, ready: /"msg":"listening"/ });
  try {
    const base = `http://127.0.0.1:${port}`;
    const { cookie } = await signInHttp(base, 'bench@example.test', 'bench-password-1');
    await load(`${base}/healthz`, {}); // warm-up
    await load(`${base}/api/me`, { cookie });
    const cpu = new CpuPerRequest(child.pid!);
    const health: number[] = []; const me: number[] = [];
    for (let round = 0; round < 2; round++) {
      health.push((await cpu.measure('health', () => load(`${base}/healthz`, {}))).rate);
      me.push((await cpu.measure('me', () => load(`${base}/api/me`, { cookie }))).rate);
    }
    const avg = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    const us = (name: string) => { const v = cpu.perRequest(name); return v === undefined ? '    n/a' : `${v.toFixed(0).padStart(7)}`; };
    console.log(`session check: ${CONNECTIONS} connections, ${DURATION}s x 2 rounds each, interleaved`);
    console.log(`GET /healthz (baseline, no auth)   ${avg(health).toFixed(0).padStart(7)} req/s   server CPU ${us('health')} µs/req`);
    console.log(`GET /api/me  (session cookie)      ${avg(me).toFixed(0).padStart(7)} req/s   server CPU ${us('me')} µs/req`);
    console.log(`ratio /api/me : /healthz           ${(avg(me) / avg(health)).toFixed(2)}  (aim >= 0.60)`);
    const h = cpu.perRequest('health'); const m = cpu.perRequest('me');
    if (h !== undefined && m !== undefined) console.log(`ratio by server CPU per request     ${(h / m).toFixed(2)}  (steadier on a loaded machine)`);
  } finally {
    child.kill('SIGTERM');
    await waitExit(child);
    await db.drop();
  }
}

await main();
