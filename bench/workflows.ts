// Issue 5 figures, in the shape of Windmill's published comparison, each beside a bare BullMQ
// baseline measured in the same run on the same Redis:
//   A. one flow of 40 light sequential tasks  vs  a chain of 40 bare jobs (each job adds the next)
//   B. 100 concurrent single-task executions  vs  100 bare jobs added concurrently
//   C. one flow of a parallel of 50 light tasks  vs  50 bare jobs added concurrently (the branches
//      end together: their steps contend for one execution)
// Orchestration overhead per task = (svc time - baseline time) / tasks; aim: under 5 ms (median).
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { sql } from 'kysely';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { loadConfig } from '../src/config/index.js';
import { createServices, type Services } from '../src/services.js';
import { createLogging } from '../src/log/logger.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { initAdministrator } from '../src/bootstrap/init.js';
import { saveFlow } from '../src/workflows/flows.js';
import { createExecution } from '../src/workflows/executions.js';
import { startWorkflowWorker } from '../src/jobs/workflow-worker.js';
import { findWorkspace } from '../src/workspaces/workspaces.js';
import { createTestDatabase } from '../test/helpers/db.js';
import { cpuMicros } from './process-cpu.js';
import { redisUrl } from '../test/helpers/redis-dbs.js';

const RUNS = Number(process.env.BENCH_RUNS ?? 11);
const REDIS_URL = redisUrl('benchWorkflows');
const median = (xs: number[]) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };

async function bareChain(redis: Redis, n: number): Promise<number> {
  const prefix = `bench-${Math.random().toString(36).slice(2)}`;
  const q = new Queue('chain', { connection: redis, prefix });
  let resolve!: () => void;
  const done = new Promise<void>((r) => { resolve = r; });
  const w = new Worker('chain', async (job) => {
    const i = job.data.i as number;
    if (i + 1 < n) await q.add('t', { i: i + 1 });
    else resolve();
  }, { connection: redis, prefix, concurrency: 8, drainDelay: 1 });
  await w.waitUntilReady();
  const t0 = performance.now();
  await q.add('t', { i: 0 });
  await done;
  const ms = performance.now() - t0;
  await w.close(); await q.obliterate({ force: true }); await q.close();
  return ms;
}

async function bareFanout(redis: Redis, n: number): Promise<number> {
  const prefix = `bench-${Math.random().toString(36).slice(2)}`;
  const q = new Queue('fan', { connection: redis, prefix });
  let left = n; let resolve!: () => void;
  const done = new Promise<void>((r) => { resolve = r; });
  const w = new Worker('fan', async () => { if (--left === 0) resolve(); }, { connection: redis, prefix, concurrency: 8, drainDelay: 1 });
  await w.waitUntilReady();
  const t0 = performance.now();
  // 100 separate adds, as 100 executions are 100 separate submissions (not one addBulk)
  await Promise.all(Array.from({ length: n }, (_, i) => q.add('t', { i })));
  await done;
  const ms = performance.now() - t0;
  await w.close(); await q.obliterate({ force: true }); await q.close();
  return ms;
}

/**
 * Waits until the executions ended and returns when the last one did, by the platform's own record
 * (ended_at, set by the step that ends it). Polling slowly keeps the waiting out of the figure:
 * a tight poll loop would load the database and the process the benchmark measures.
 */
async function lastEnded(s: Services, ids: string[]): Promise<number> {
  for (;;) {
    const { rows } = await sql<{ open: number; last: Date }>`
      SELECT count(*) FILTER (WHERE ended_at IS NULL)::int AS open, max(ended_at) AS last FROM executions WHERE id = ANY(${ids}::uuid[])`.execute(s.db);
    if (rows[0].open === 0) return rows[0].last.getTime();
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** CPU µs the Redis server has used (INFO cpu): the bench is its only client while it runs. */
async function redisCpu(redis: Redis): Promise<number> {
  const info = await redis.info('cpu');
  const field = (k: string) => Number(new RegExp(`^${k}:([0-9.]+)`, 'm').exec(info)?.[1] ?? 0);
  return Math.round((field('used_cpu_user') + field('used_cpu_sys')) * 1e6);
}

/** CPU µs used so far by this process, the PostgreSQL backends of the bench database (/proc, Linux) and Redis. */
async function cpuNow(s: Services, redis: Redis): Promise<{ node: number; pg: Map<number, number>; redis: number }> {
  const { rows } = await sql<{ pid: number }>`SELECT pid FROM pg_stat_activity WHERE datname = current_database()`.execute(s.db);
  const pg = new Map<number, number>();
  for (const { pid } of rows) { const us = cpuMicros(pid); if (us !== undefined) pg.set(pid, us); }
  const u = process.cpuUsage();
  return { node: u.user + u.system, pg, redis: await redisCpu(redis) };
}
/** CPU µs between two readings: the process, and the backends (one that appeared counts from 0). */
const cpuSpent = (a: Awaited<ReturnType<typeof cpuNow>>, b: Awaited<ReturnType<typeof cpuNow>>) =>
  ({ node: b.node - a.node, pg: [...b.pg].reduce((t, [pid, us]) => t + us - (a.pg.get(pid) ?? 0), 0), redis: b.redis - a.redis });

async function main() {
  const db = await createTestDatabase('svc_bench');
  const cwd = await mkdtemp(path.join(tmpdir(), 'svc-bench-'));
  const config = loadConfig({ cwd, env: {
    SVC_DATABASE__URL: db.url, SVC_STORAGE__ACCESS_KEY: 'ak', SVC_STORAGE__SECRET_KEY: 'sk', SVC_REDIS__URL: REDIS_URL,
    SVC_WORKFLOW__WORKER_ENABLED: 'true', SVC_DATABASE__MAX_CONNECTIONS: '20',
  } });
  const sink = new PassThrough(); sink.resume();
  const services = createServices(config, { queuePrefix: `bench-svc-${Date.now()}`, logging: createLogging({ filter: 'warn', json: true }, sink) });
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  try {
    await migrateToLatest(services.db, config.database.url);
    await initAdministrator(services.db, { email: 'bench@example.test', password: 'bench-password', force: false });
    const ws = (await findWorkspace(services.db, 'default'))!;
    const actor = { id: (await services.db.selectFrom('users').select('id').executeTakeFirstOrThrow()).id, email: 'bench@example.test' };
    const tasks40 = Array.from({ length: 40 }, (_, i) => `  - id: t${i}\n    type: output\n    values: { i: ${i} }\n`).join('');
    await saveFlow(services, actor, ws.id, ws.slug, `id: seq40\nnamespace: bench\ntasks:\n${tasks40}`);
    await saveFlow(services, actor, ws.id, ws.slug, 'id: one\nnamespace: bench\ntasks:\n  - id: t\n    type: output\n    values: { ok: true }\n');
    const branches = Array.from({ length: 50 }, (_, i) => `      - id: p${i}\n        type: output\n        values: { i: ${i} }\n`).join('');
    await saveFlow(services, actor, ws.id, ws.slug, `id: par50\nnamespace: bench\ntasks:\n  - id: all\n    type: parallel\n    tasks:\n${branches}`);
    const worker = await startWorkflowWorker(services);

    // Warm-up: one round of each scenario on each side (compiled code, pooled connections and
    // their prepared statements), so the figures are the steady state.
    await lastEnded(services, [(await createExecution(services, { workspaceId: ws.id, namespace: 'bench', flowId: 'seq40', inputs: {}, trigger: { type: 'bench' } })).id]);
    await lastEnded(services, await Promise.all(Array.from({ length: 100 }, () => createExecution(services, { workspaceId: ws.id, namespace: 'bench', flowId: 'one', inputs: {}, trigger: { type: 'bench' } }).then((x) => x.id))));
    await lastEnded(services, [(await createExecution(services, { workspaceId: ws.id, namespace: 'bench', flowId: 'par50', inputs: {}, trigger: { type: 'bench' } })).id]);
    await bareChain(redis, 40);
    await bareFanout(redis, 100);

    // CPU time per execution of B on each side (the steadier figure on a shared machine): this
    // process (API, worker and BullMQ client; svc's includes its 25 ms waiting loop), PostgreSQL
    // and Redis. On a machine with few cores the three share them: the sum bounds the time.
    const cpuSvc = { node: 0, pg: 0, redis: 0 }; const cpuBare = { node: 0, redis: 0 };
    const seqSvc: number[] = []; const seqBare: number[] = []; const fanSvc: number[] = []; const fanBare: number[] = [];
    const parSvc: number[] = []; const parBare: number[] = [];
    for (let r = 0; r < RUNS; r++) {
      seqBare.push(await bareChain(redis, 40));
      let t0 = Date.now();
      const e = await createExecution(services, { workspaceId: ws.id, namespace: 'bench', flowId: 'seq40', inputs: {}, trigger: { type: 'bench' } });
      seqSvc.push(await lastEnded(services, [e.id]) - t0);

      let c0 = await cpuNow(services, redis);
      fanBare.push(await bareFanout(redis, 100));
      let c1 = await cpuNow(services, redis);
      const bare = cpuSpent(c0, c1);
      cpuBare.node += bare.node; cpuBare.redis += bare.redis;
      c0 = c1;
      t0 = Date.now();
      const ids = await Promise.all(Array.from({ length: 100 }, () => createExecution(services, { workspaceId: ws.id, namespace: 'bench', flowId: 'one', inputs: {}, trigger: { type: 'bench' } }).then((x) => x.id)));
      fanSvc.push(await lastEnded(services, ids) - t0);
      c1 = await cpuNow(services, redis);
      const spent = cpuSpent(c0, c1);
      cpuSvc.node += spent.node; cpuSvc.pg += spent.pg; cpuSvc.redis += spent.redis;

      parBare.push(await bareFanout(redis, 50));
      t0 = Date.now();
      const p = await createExecution(services, { workspaceId: ws.id, namespace: 'bench', flowId: 'par50', inputs: {}, trigger: { type: 'bench' } });
      parSvc.push(await lastEnded(services, [p.id]) - t0);
    }
    await worker.close();
    const states = await services.db.selectFrom('executions').select(({ fn }) => ['state', fn.countAll<string>().as('n')]).groupBy('state').execute();
    const row = (name: string, svc: number[], bare: number[], tasks: number, aim?: number, aimMs?: number) => {
      const s = median(svc); const b = median(bare);
      const goal = (aim === undefined ? '' : `   aim <= ${aim}x: ${s / b <= aim ? 'met' : 'NOT met'}`)
        + (aimMs === undefined ? '' : `   aim < ${aimMs} ms/task: ${(s - b) / tasks < aimMs ? 'met' : 'NOT met'}`);
      console.log(`${name.padEnd(44)} svc ${s.toFixed(0).padStart(6)} ms   bare BullMQ ${b.toFixed(0).padStart(5)} ms   ratio ${(s / b).toFixed(1).padStart(5)}x   overhead/task ${((s - b) / tasks).toFixed(2)} ms${goal}`);
    };
    console.log(`workflow benchmark: ${RUNS} runs each, medians, worker batch ${config.workflow.batch}; executions by state: ${states.map((x) => `${x.state}=${x.n}`).join(' ')}`);
    // issue 27 point 9: under 1 ms of overhead per task
    row('A. 1 flow x 40 sequential light tasks', seqSvc, seqBare, 40, undefined, 1);
    // issue 11: within 4x of bare BullMQ
    row('B. 100 concurrent single-task executions', fanSvc, fanBare, 100, 4);
    row('C. 1 flow, a parallel of 50 light tasks', parSvc, parBare, 50);
    const perExec = (us: number) => (us / RUNS / 100 / 1000).toFixed(2);
    console.log(`   B, CPU per execution: this process svc ${perExec(cpuSvc.node)} ms, bare BullMQ ${perExec(cpuBare.node)} ms; Redis svc ${perExec(cpuSvc.redis)} ms, bare ${perExec(cpuBare.redis)} ms; PostgreSQL svc ${perExec(cpuSvc.pg)} ms`);
  } finally {
    for (const q of services.queues.all()) await q.obliterate({ force: true }).catch(() => {});
    await redis.flushdb(); await redis.quit();
    await services.close();
    await db.drop();
  }
}

await main();
