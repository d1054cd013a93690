// Issue 10 point 5: a foreach's cost per item must not grow with its length (2,000 items took
// 347 s before the steps stopped reading finished iterations). One flow runs a foreach of 2,000
// light items and, in the same run on the same worker, a foreach of 200 of the same items (the
// baseline); the figure is the per-item time of 2,000 over the per-item time of 200: linear
// cost is about 1, a step whose cost grows with the finished iterations shows about 10.
// workflow.foreach_max_items (default 1000) is raised to 2000 the documented way, by its key.
// Redis database 10 is this bench's own: bench/workflows.ts flushes database 9 when it ends, and
// run beside it this bench lost its queued jobs there and never finished.
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
import { redisUrl } from '../test/helpers/redis-dbs.js';

const RUNS = Number(process.env.BENCH_RUNS ?? 1);
const BIG = 2000; const SMALL = 200; const CONCURRENCY = 8;
const median = (xs: number[]) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };

/** Polls slowly (so the wait stays out of the figure) until the execution ended; its state and duration by its own record. */
async function ended(s: Services, id: string): Promise<{ state: string; ms: number }> {
  for (;;) {
    const { rows } = await sql<{ state: string; started_at: Date; ended_at: Date | null }>`
      SELECT state, created_at AS started_at, ended_at FROM executions WHERE id = ${id}::uuid`.execute(s.db);
    if (rows[0].ended_at) return { state: rows[0].state, ms: rows[0].ended_at.getTime() - rows[0].started_at.getTime() };
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function main() {
  const db = await createTestDatabase('svc_bench_foreach');
  const cwd = await mkdtemp(path.join(tmpdir(), 'svc-bench-'));
  const config = loadConfig({ cwd, env: {
    SVC_DATABASE__URL: db.url, SVC_STORAGE__ACCESS_KEY: 'ak', SVC_STORAGE__SECRET_KEY: 'sk', SVC_REDIS__URL: redisUrl('benchForeach'),
    SVC_WORKFLOW__WORKER_ENABLED: 'true', SVC_DATABASE__MAX_CONNECTIONS: '20', SVC_WORKFLOW__FOREACH_MAX_ITEMS: String(BIG),
  } });
  const sink = new PassThrough(); sink.resume();
  const services = createServices(config, { queuePrefix: `bench-foreach-${Date.now()}`, logging: createLogging({ filter: 'warn', json: true }, sink) });
  try {
    await migrateToLatest(services.db, config.database.url);
    await initAdministrator(services.db, { email: 'bench@example.test', password: 'bench-password', force: false });
    const ws = (await findWorkspace(services.db, 'default'))!;
    const actor = { id: (await services.db.selectFrom('users').select('id').executeTakeFirstOrThrow()).id, email: 'bench@example.test' };
    // Each iteration: two light tasks, the second reading the first's output (a template read).
    const flow = (id: string, n: number) => `id: ${id}\nnamespace: bench\ntasks:\n  - id: each\n    type: foreach\n    concurrency: ${CONCURRENCY}\n`
      + `    values: [${Array.from({ length: n }, (_, i) => i).join(', ')}]\n    tasks:\n      - id: x\n        type: output\n        values: { v: '{{ taskrun.value }}' }\n`
      + `      - id: y\n        type: output\n        values: { w: '{{ outputs.x.v }}' }\n`;
    await saveFlow(services, actor, ws.id, ws.slug, flow('big', BIG));
    await saveFlow(services, actor, ws.id, ws.slug, flow('small', SMALL));
    const worker = await startWorkflowWorker(services);
    const runOnce = async (flowId: string) => {
      const e = await createExecution(services, { workspaceId: ws.id, namespace: 'bench', flowId, inputs: {}, trigger: { type: 'bench' } });
      const r = await ended(services, e.id);
      if (r.state !== 'SUCCESS') throw new Error(`${flowId} ended ${r.state}`);
      return r.ms;
    };
    await runOnce('small'); // warm-up: compiled code, pooled connections, prepared statements
    const small: number[] = []; const big: number[] = [];
    for (let r = 0; r < RUNS; r++) { small.push(await runOnce('small')); big.push(await runOnce('big')); }
    await worker.close();
    const s = median(small) / SMALL; const b = median(big) / BIG;
    console.log(`foreach benchmark: ${RUNS} runs each, medians, concurrency ${CONCURRENCY}, 2 light tasks per item, worker batch ${config.workflow.batch}`);
    console.log(`baseline: foreach of ${SMALL} items   ${median(small).toFixed(0).padStart(7)} ms   ${s.toFixed(2)} ms/item`);
    console.log(`foreach of ${BIG} items             ${median(big).toFixed(0).padStart(7)} ms   ${b.toFixed(2)} ms/item`);
    console.log(`per-item cost ratio ${BIG} vs ${SMALL}: ${(b / s).toFixed(2)} (linear: about 1; aim <= 1.5: ${b / s <= 1.5 ? 'met' : 'NOT met'})`);
  } finally {
    for (const q of services.queues.all()) await q.obliterate({ force: true }).catch(() => {});
    await services.close();
    await db.drop();
  }
}

await main();
